"""A Hugging Face ``config.json`` dict → ModelSpec, and nothing else.

The spec lists every weight tensor transformers 5 creates for that config — the parameter names
``named_parameters()`` reports, their shapes, a role and the decoder layer — and, per decoder
layer, what it keeps per sequence: an attention KV cache (full, sliding or MLA latent) and/or a
recurrent state (Mamba, gated delta-net). It is pure: no I/O and no transformers import.

Each family mirrors its modeling file in transformers 5.23 (``models/<family>/modeling_*.py`` and
the config class's defaults for fields a config.json may leave out); tests/test_hf_config.py builds
the same configs with transformers on the meta device and compares names and shapes one by one.
What transformers keeps as buffers rather than parameters (rotary tables, DeepSeek's
``e_score_correction_bias``) is not listed, and a tied LM head is listed once, as the embedding.

Layout: access.py (config access, _Cfg), blocks.py (a tensor collector, _Tensors, and shared blocks:
attention, MLP, experts, MLA, Mamba 1/2 mixers, gated delta-net, which layers slide, the decoder stack),
text.py (one short builder per family), vision.py (vision towers), and here the FAMILIES table that
spec_from_config dispatches on (underscore names are the package's own, shared between its modules).
Unknown model types that look like a plain Llama decoder are read through the Llama builder and say so
in ``spec.notes``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import ModelFormatError
from ..limits import _shown as shown
from ..limits import check_spec, printable
from ..spec import LayerSpec, ModelSpec
from .access import _Cfg
from .blocks import _Tensors
from .text import (
    _cohere,
    _cohere2,
    _deepseek,
    _falcon_h1,
    _gemma,
    _gemma2,
    _gemma3,
    _glm4,
    _gpt_oss,
    _granitemoe,
    _granitemoehybrid,
    _jamba,
    _llama,
    _llama4_text,
    _mamba,
    _mamba2_family,
    _mistral,
    _mixtral,
    _mllama_text,
    _olmo2,
    _phi,
    _phi3,
    _qwen2,
    _qwen2_moe,
    _qwen3,
    _qwen3_5,
    _qwen3_5_moe,
    _qwen3_moe,
    _qwen3_next,
    _smollm3,
)
from .text_early import _dbrx, _falcon, _gpt_neox, _olmo, _stablelm, dbrx_flat
from .text_recent import _gemma4, _glm4_moe, _minimax_m2, _nemotron_h, _olmo3
from .vision import (
    _gemma3_vision,
    _gemma4_towers,
    _llama4_vision,
    _mllama_vision,
    _pixtral_vision,
    _qwen3_5_vision,
    _qwen3_vl_vision,
    _qwen25_vision,
)

# ------------------------------------------------------------------------------------------------
# the family table

Builder = Callable[[_Cfg, _Tensors, str], list[LayerSpec]]

FAMILIES: dict[str, Builder] = {
    "llama": _llama, "granite": _llama, "smollm3": _smollm3, "mistral": _mistral, "mixtral": _mixtral,
    "qwen2": _qwen2, "qwen2_5_vl_text": _qwen2, "qwen3": _qwen3, "qwen2_moe": _qwen2_moe,
    "qwen3_moe": _qwen3_moe, "qwen3_vl_text": _qwen3, "qwen3_vl_moe_text": _qwen3_moe,
    "qwen3_next": _qwen3_next, "qwen3_5_text": _qwen3_5, "qwen3_5_moe_text": _qwen3_5_moe,
    "gemma": _gemma, "gemma2": _gemma2, "gemma3_text": _gemma3,
    "phi": _phi, "phi3": _phi3, "cohere": _cohere, "cohere2": _cohere2, "olmo2": _olmo2, "glm4": _glm4,
    "gpt_oss": _gpt_oss, "deepseek_v2": _deepseek, "deepseek_v3": _deepseek,
    "llama4_text": _llama4_text, "mllama_text_model": _mllama_text,
    "jamba": _jamba, "falcon_h1": _falcon_h1, "granitemoe": _granitemoe, "granitemoehybrid": _granitemoehybrid,
    "mamba": _mamba, "mamba2": _mamba2_family,
    "gpt_neox": _gpt_neox, "stablelm": _stablelm, "olmo": _olmo, "falcon": _falcon,
    "minimax_m2": _minimax_m2, "glm4_moe": _glm4_moe, "olmo3": _olmo3, "nemotron_h": _nemotron_h,
    "gemma4_text": _gemma4, "dbrx": _dbrx,
}

# Whole-model layout per family: (prefix of the text model, LM head name, where the tie flag lives).
_CAUSAL = ("model.", "lm_head", "text")
_LAYOUT: dict[str, tuple[str, str, str]] = {"mamba": ("backbone.", "lm_head", "text"),
                                             "mamba2": ("backbone.", "lm_head", "text"),
                                             "gpt_neox": ("gpt_neox.", "lm_head", "text"),
                                             "falcon": ("transformer.", "lm_head", "text"),
                                             "dbrx": ("transformer.", "lm_head", "text")}

# Multimodal wrappers: text sub-config type, vision builder, (text prefix, LM head, tie flag owner).
_MULTIMODAL: dict[str, tuple[str, Callable[[_Cfg, _Cfg, _Tensors], None], tuple[str, str, str]]] = {
    "gemma3": ("gemma3_text", _gemma3_vision, ("model.language_model.", "lm_head", "top")),
    "gemma4": ("gemma4_text", _gemma4_towers, ("model.language_model.", "lm_head", "top")),
    "mistral3": ("mistral", _pixtral_vision, ("model.language_model.", "lm_head", "top")),
    "qwen2_5_vl": ("qwen2_5_vl_text", _qwen25_vision, ("model.language_model.", "lm_head", "top|text")),
    "qwen3_5": ("qwen3_5_text", _qwen3_5_vision, ("model.language_model.", "lm_head", "top")),
    "qwen3_vl": ("qwen3_vl_text", _qwen3_vl_vision, ("model.language_model.", "lm_head", "top")),
    "qwen3_vl_moe": ("qwen3_vl_moe_text", _qwen3_vl_vision, ("model.language_model.", "lm_head", "top")),
    "qwen3_5_moe": ("qwen3_5_moe_text", _qwen3_5_vision, ("model.language_model.", "lm_head", "top")),
    "llama4": ("llama4_text", _llama4_vision, ("language_model.model.", "language_model.lm_head", "text")),
    "mllama": ("mllama_text_model", _mllama_vision, ("model.language_model.", "lm_head", "top")),
}

# Fields a config needs before it can be read as a plain Llama decoder.
_LLAMA_LIKE = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size")


def _modelopt(top: dict[str, Any], text: dict[str, Any], where: str):
    from ..modelopt import is_modelopt, read_modelopt

    qc = top.get("quantization_config") or text.get("quantization_config")
    return read_modelopt(qc, where) if is_modelopt(qc) else None


def _file_quant(top: dict[str, Any], text: dict[str, Any]) -> str | None:
    qc = top.get("quantization_config") or text.get("quantization_config")
    if isinstance(qc, dict) and qc.get("quant_method"):
        method = str(qc["quant_method"]).lower()[:40]
        if method == "bitsandbytes":
            return "bnb-8bit" if qc.get("load_in_8bit") else "bnb-4bit"
        if method == "fp8" and qc.get("weight_block_size") == [128, 128]:
            # DeepSeek-V3 / Qwen3-*-FP8: fp8 e4m3 weights and an f32 weight_scale_inv per 128 × 128 block, stored in
            # the checkpoint beside each weight (transformers integrations/finegrained_fp8.py FP8Linear;
            # vllm fp8.py Fp8LinearMethod.create_weights, block_quant) — quant/formats.py "fp8-block"
            return "fp8-block"
        bits = qc.get("bits") or qc.get("w_bit") or qc.get("nbits")
        return f"{method}-{bits}bit" if bits and method in ("awq", "gptq", "hqq", "aqlm", "eetq", "quanto") else method
    dtype = top.get("torch_dtype") or top.get("dtype") or text.get("torch_dtype") or text.get("dtype")
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(str(dtype), str(dtype) if dtype else None)


def _tied(top: _Cfg, text: _Cfg, owner: str) -> bool:
    if owner == "top":
        return top.flag("tie_word_embeddings")
    if owner == "top|text":       # Qwen2.5-VL forwards a text-level tie to the top (BC with v4 saves)
        return top.flag("tie_word_embeddings") or text.flag("tie_word_embeddings")
    return text.flag("tie_word_embeddings")



def _family(config: dict[str, Any], mt: str, where: str, notes: list[str]):
    """The config views (top level, text model), vision reader, tensor layout and layer builder for a model_type;
    an unknown type shaped like a Llama decoder is read as one (noted)."""
    vision = None
    if mt in _MULTIMODAL:
        text_type, vision, layout = _MULTIMODAL[mt]
        top = _Cfg(config, mt, where)
        inner = config.get("text_config")
        if isinstance(inner, dict):
            text = top.sub("text_config", text_type)
        else:       # flat (Qwen2.5-VL): the text model's fields sit at the top level
            text = _Cfg(config, text_type, where)
        builder = FAMILIES.get(text.model_type)
        if builder is None:
            raise ModelFormatError(f"{where}: unsupported text_config model_type '{text.model_type}' inside "
                                   f"'{mt}' (expected '{text_type}')")
    else:
        top = text = _Cfg(config, mt, where)
        layout = _LAYOUT.get(mt, _CAUSAL)
        builder = FAMILIES.get(mt)
        if builder is None:
            missing = [k for k in _LLAMA_LIKE if not isinstance(config.get(k), int)]
            if missing:
                raise ModelFormatError(
                    f"{where}: unsupported model_type '{mt or '(none)'}' (supported: {', '.join(sorted(FAMILIES))}, "
                    f"{', '.join(sorted(_MULTIMODAL))}); nor is it a Llama-like decoder: missing {', '.join(missing)}")
            builder = _llama
            notes.append(f"model_type '{mt or '(none)'}' is not a known family: read as a Llama-like decoder "
                         "(q/k/v/o + gated MLP + RMSNorms); family-specific tensors may be missing")
    return top, text, vision, layout, builder


def spec_from_config(config: dict[str, Any], *, id: str, source: str = "", repo_id: str | None = None,
                     quant_config: dict[str, Any] | None = None) -> ModelSpec:
    """A config.json dict → ModelSpec with transformers 5's tensors and the per-layer cache layout.

    ``quant_config`` is the repo's hf_quant_config.json (NVIDIA ModelOpt), taken as the quantization_config when
    config.json has none, as vLLM does (model/modelopt.py).

    Raises ModelFormatError for a non-dict config, a missing or malformed required field (named in
    the message), or a model_type that is neither supported nor shaped like a Llama decoder.
    """
    where = source or id
    if not isinstance(config, dict):
        raise ModelFormatError(f"{where}: config.json must be a JSON object, got {type(config).__name__}")
    if quant_config is not None and "quantization_config" not in config:
        config = {**config, "quantization_config": quant_config}
    mt = config.get("model_type") or ""
    if not isinstance(mt, str) or len(mt) > 64:
        raise ModelFormatError(f"{where}: model_type is {shown(mt)} (expected a short name such as 'llama')")
    if mt == "dbrx":
        config = dbrx_flat(config)
    notes: list[str] = []
    top, text, vision, layout, builder = _family(config, mt, where, notes)
    for key in ("hidden_size", "num_hidden_layers", "vocab_size"):
        text.int(key)
    if builder not in (_mamba, _mamba2_family):
        text.int("num_attention_heads")

    t = _Tensors()
    if vision is not None and mt != "llama4":
        vision(top, text, t)
    prefix, head, tie_owner = layout
    layers = builder(text, t, prefix)
    if vision is not None and mt == "llama4":
        vision(top, text, t)
    tied = _tied(top, text, tie_owner)
    if not tied:
        vocab = text.vocab
        t.linear(head, vocab, text.h, "lm_head", None, bias=False)
        if builder is _phi:
            t.add(head + ".bias", (vocab,), "lm_head")
    notes += t.notes

    is_ssm = builder in (_mamba, _mamba2_family)
    n_exp = 0 if builder is _llama else int(text.get("num_local_experts") or text.get("num_experts")
                                            or text.get("n_routed_experts") or 0)
    if builder in (_jamba, _granitemoehybrid, _nemotron_h):
        n_exp = n_exp if any(ly.moe for ly in layers) else 0
    modelopt = _modelopt(config, text.d, where)
    if modelopt is not None:
        notes.append(f"NVIDIA ModelOpt {modelopt.algo} checkpoint: planned as stored ({modelopt.format})"
                     + (f"; {len(modelopt.exclude)} module pattern(s) kept unquantized" if modelopt.exclude else ""))
    archs = config.get("architectures")
    archs = [printable(archs[0], 200)] if isinstance(archs, list) and archs and isinstance(archs[0], str) else []
    return check_spec(ModelSpec(
        id=id, architecture=archs[0] if archs else mt, family=mt or text.model_type,
        hidden_size=text.h, n_layers=text.n_layers, n_heads=0 if is_ssm else text.heads, vocab_size=text.vocab,
        layers=tuple(layers), tensors=tuple(t.items),
        intermediate_size=text.get("intermediate_size") if isinstance(text.get("intermediate_size"), int) else None,
        max_position_embeddings=text.get("max_position_embeddings"), tie_word_embeddings=tied,
        n_experts=n_exp, n_experts_active=int(text.get("num_experts_per_tok") or text.get("top_k_experts") or 0) if n_exp else 0,
        source=source, repo_id=repo_id, file_quant=modelopt.format if modelopt else _file_quant(config, text.d),
        quant_exclude=modelopt.exclude if modelopt else (), kv_cache_quant=modelopt.kv_cache if modelopt else None,
        notes=tuple(notes)))
