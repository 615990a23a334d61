"""GGUF file bytes for any model under any llama.cpp quantization type, without the file.

Two steps, each following llama.cpp's own code (ggml-org/llama.cpp: src/llama-quant.cpp at commit
007dbbf3fd17eefe9b47fee45f48f7ba5e62b714, compared with 8784689fee07c6daabf3487d24e1535534ef6e6b;
convert_hf_to_gguf.py's prepare_tensors and the MoE/Gemma 3 modify_tensors):

1. ``gguf_tensors`` — the tensors ``convert_hf_to_gguf.py`` writes: Hugging Face names mapped to
   GGUF names with gguf-py's ``TensorNameMap``; per-expert weights merged into 3-D
   ``ffn_{gate,up,down}_exps`` tensors and fused ``gate_up_proj`` experts split (``modify_tensors``
   of the MoE model classes); vision/audio towers dropped (they go to a separate mmproj file);
   ``lm_head`` absent when embeddings are tied; Gemma 3's out-of-vocabulary embedding rows trimmed;
   DeepSeek-V2/V3 and Kimi K2 (arch deepseek2, MLA) ``kv_b_proj`` split per head into ``attn_k_b``
   (K part transposed) and ``attn_v_b`` and the V3 router's ``e_score_correction_bias`` written as
   ``exp_probs_b`` (conversion/deepseek.py ``DeepseekV2Model.modify_tensors``, base.py
   ``map_tensor_name``; llama.cpp 0c1e5709, the build the measurements ran).
   Storage as ``prepare_tensors`` decides it: 1-D tensors, ``*_norm.weight``, biases (any name
   not ending in ``.weight``), routers (``ffn_gate_inp``), ``pos_embd``, ``token_types`` and
   ``ssm_conv1d`` stay F32; everything else keeps the checkpoint's 16-bit type.

2. ``choose_type`` — ``src/llama-quant.cpp``: ``tensor_allows_quantization`` (2-D/3-D weights only,
   no norms, routers, conv1d …), ``llama_ftype_get_default_type``, the per-ftype mix of
   ``llama_tensor_get_type_impl`` (Q6_K/Q5_K output and tied embeddings, ``use_more_bits`` for
   attn_v/ffn_down in Q4_K_M/Q5_K_M, the Q3_K_* / Q2_K / IQ* bumps, the n_expert == 8 and 70B
   bumps, the MXFP4_MOE split) and ``tensor_type_fallback`` when a row length is not a multiple
   of the block size. Tensors are visited in the loader's order (``weight_name_comparer``:
   non-block tensors first, then by block number, then by name), because the attn_v and
   ffn_down counters depend on it.

Bytes are exact block arithmetic from gguf-py's ``GGML_QUANT_SIZES`` (rows × blocks per row ×
block bytes), each tensor padded to the 32-byte ``general.alignment``. The header (tensor infos
+ key/value metadata, mostly the tokenizer vocabulary) is an estimate, see ``header_bytes``.

One deliberate departure from 007dbbf3: its ``tensor_category`` refactor sends ``attn_qkv`` and
``attn_kv_b`` through the attn_v rules (the ``ATTENTION_QKV`` branch became unreachable); the
releases that made the files on the Hub did not, so the earlier behaviour is the default and
``fused_qkv_as_v=True`` gives the new one (see ``choose_type``). MLA's ``attn_k_b`` / ``attn_v_b``
match no category (``tensor_get_category``: OTHER), so they keep the ftype's default type, ``attn_k_b``'s
128-element rows taking the fallback of the 256-block types (Q4_K → Q5_0, Q6_K → Q8_0 …).

What cannot be predicted from the model alone: an importance matrix changes a few IQ3/IQ4/Q4_0/
Q5_0 choices (``imatrix``); files made before 2024 used older Q2_K, Q3_K_M (80-layer) and Q4_K_S
mixes; hand-made mixes (``--output-tensor-type``, ``--tensor-type``, unsloth "UD" files, Q4_K_L …)
are not llama-quantize defaults.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from functools import lru_cache

from ..errors import InputError
from ..model.gguf import tensor_role
from ..model.spec import GGUF_NAME, ModelSpec, TensorInfo
from ..units import round_up
from . import gguf_names_table
from .ggml_types import QUANT_SIZES as GGML_QUANT_SIZES
from .ggml_types import Arch as MODEL_ARCH
from .ggml_types import GGMLType as GGMLQuantizationType
from .ggml_types import LlamaFileType

Q = GGMLQuantizationType
ALIGNMENT = 32      # GGUF_DEFAULT_ALIGNMENT (ggml/include/gguf.h)

# ------------------------------------------------------------------------------------------------
# file types (llama.h: enum llama_ftype; gguf-py: LlamaFileType)

_FTYPE_ALIASES = {"F32": "ALL_F32", "FP32": "ALL_F32", "FP16": "MOSTLY_F16", "Q3_K": "MOSTLY_Q3_K_M",
                  "Q4_K": "MOSTLY_Q4_K_M", "Q5_K": "MOSTLY_Q5_K_M", "MXFP4": "MOSTLY_MXFP4_MOE"}


def _ftype_name(ft: LlamaFileType) -> str:
    return "F32" if ft is LlamaFileType.ALL_F32 else ft.name.removeprefix("MOSTLY_")


# llama_ftype_get_default_type (src/llama-quant.cpp): the type every quantizable tensor starts from.
_DEFAULT_TYPE: dict[str, str] = {
    "F32": "F32", "F16": "F16", "BF16": "BF16", "Q4_0": "Q4_0", "Q4_1": "Q4_1", "Q5_0": "Q5_0", "Q5_1": "Q5_1",
    "Q8_0": "Q8_0", "Q1_0": "Q1_0", "MXFP4_MOE": "MXFP4", "NVFP4": "NVFP4",
    "Q2_K": "Q2_K", "Q2_K_S": "Q2_K", "IQ3_XS": "IQ3_S", "Q3_K_S": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_L": "Q3_K",
    "Q4_K_S": "Q4_K", "Q4_K_M": "Q4_K", "Q5_K_S": "Q5_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K",
    "TQ1_0": "TQ1_0", "TQ2_0": "TQ2_0", "IQ2_XXS": "IQ2_XXS", "IQ2_XS": "IQ2_XS", "IQ2_S": "IQ2_XS",
    "IQ2_M": "IQ2_S", "IQ3_XXS": "IQ3_XXS", "IQ1_S": "IQ1_S", "IQ1_M": "IQ1_M", "IQ4_NL": "IQ4_NL",
    "IQ4_XS": "IQ4_XS", "IQ3_S": "IQ3_S", "IQ3_M": "IQ3_S",
}

# Every LLAMA_FTYPE_MOSTLY_* that gguf-py knows and whose tensor types it can size.
SUPPORTED_FTYPES: tuple[str, ...] = tuple(
    name for name in (_ftype_name(ft) for ft in LlamaFileType if ft.name != "GUESSED")
    if name in _DEFAULT_TYPE and hasattr(Q, _DEFAULT_TYPE[name]) and Q[_DEFAULT_TYPE[name]] in GGML_QUANT_SIZES
)


def normalize_ftype(ftype: str) -> str:
    """'q4_k_m', 'MOSTLY_Q4_K_M', 'Q4_K' → 'Q4_K_M'; unknown names raise InputError."""
    key = ftype.strip().upper().replace("-", "_")
    key = _FTYPE_ALIASES.get(key, key)
    key = "F32" if key == "ALL_F32" else key.removeprefix("MOSTLY_")
    if key not in SUPPORTED_FTYPES:
        raise InputError(f"unknown llama.cpp quantization type '{ftype}'; known: {', '.join(SUPPORTED_FTYPES)}")
    return key


def _is_quantized(t: GGMLQuantizationType) -> bool:
    return t not in (Q.F32, Q.F16, Q.BF16, Q.F64, Q.I8, Q.I16, Q.I32, Q.I64)


def _block(t: GGMLQuantizationType) -> int:
    return GGML_QUANT_SIZES[t][0]


def tensor_bytes(shape: tuple[int, ...], qtype: GGMLQuantizationType) -> int:
    """ggml_nbytes of a row-major tensor: rows × (row length / block) × block bytes (exact)."""
    block, size = GGML_QUANT_SIZES[qtype]
    ncols = shape[-1] if shape else 1
    rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
    if ncols % block:
        raise InputError(f"row length {ncols} is not a multiple of {qtype.name}'s block of {block}")
    return rows * (ncols // block) * size


def _pad(n: int) -> int:
    return round_up(n, ALIGNMENT)


# ------------------------------------------------------------------------------------------------
# step 1: the converter's tensor list

# HF model_type → gguf architecture (convert_hf_to_gguf.py's @ModelBase.register classes).
_ARCH_BY_MODEL_TYPE: dict[str, str] = {
    "llama": MODEL_ARCH.LLAMA, "mistral": MODEL_ARCH.LLAMA, "mixtral": MODEL_ARCH.LLAMA,
    "mistral3": MODEL_ARCH.LLAMA, "llava": MODEL_ARCH.LLAMA, "yi": MODEL_ARCH.LLAMA,
    "llama4": MODEL_ARCH.LLAMA4, "llama4_text": MODEL_ARCH.LLAMA4,
    "qwen2": MODEL_ARCH.QWEN2, "qwen2_moe": MODEL_ARCH.QWEN2MOE,
    "qwen2_vl": MODEL_ARCH.QWEN2VL, "qwen2_5_vl": MODEL_ARCH.QWEN2VL, "qwen3": MODEL_ARCH.QWEN3,
    "qwen3_moe": MODEL_ARCH.QWEN3MOE, "qwen3_next": MODEL_ARCH.QWEN3NEXT,
    "qwen3_5": MODEL_ARCH.QWEN35, "qwen3_5_text": MODEL_ARCH.QWEN35, "qwen3_5_moe": MODEL_ARCH.QWEN35MOE,
    "qwen3_5_moe_text": MODEL_ARCH.QWEN35MOE, "gemma": MODEL_ARCH.GEMMA,
    "gemma2": MODEL_ARCH.GEMMA2, "gemma3": MODEL_ARCH.GEMMA3, "gemma3_text": MODEL_ARCH.GEMMA3,
    "gemma3n": MODEL_ARCH.GEMMA3N, "phi3": MODEL_ARCH.PHI3, "phimoe": MODEL_ARCH.PHIMOE, "phi": MODEL_ARCH.PHI2,
    "gpt_oss": MODEL_ARCH.GPT_OSS, "deepseek_v2": MODEL_ARCH.DEEPSEEK2, "deepseek_v3": MODEL_ARCH.DEEPSEEK2,
    "kimi_k2": MODEL_ARCH.DEEPSEEK2, "deepseek": MODEL_ARCH.DEEPSEEK, "granite": MODEL_ARCH.GRANITE,
    "granitemoe": MODEL_ARCH.GRANITE_MOE, "granitemoehybrid": MODEL_ARCH.GRANITE_HYBRID,
    "olmo": MODEL_ARCH.OLMO, "olmo2": MODEL_ARCH.OLMO2, "olmoe": MODEL_ARCH.OLMOE,
    "cohere": MODEL_ARCH.COMMAND_R, "cohere2": MODEL_ARCH.COHERE2, "smollm3": MODEL_ARCH.SMOLLM3,
    "glm4": MODEL_ARCH.GLM4, "glm4_moe": MODEL_ARCH.GLM4_MOE, "chatglm": MODEL_ARCH.CHATGLM,
    "falcon": MODEL_ARCH.FALCON, "falcon_h1": MODEL_ARCH.FALCON_H1, "mamba": MODEL_ARCH.MAMBA,
    "mamba2": MODEL_ARCH.MAMBA2, "jamba": MODEL_ARCH.JAMBA, "starcoder2": MODEL_ARCH.STARCODER2,
    "internlm2": MODEL_ARCH.INTERNLM2, "minicpm": MODEL_ARCH.MINICPM, "exaone": MODEL_ARCH.EXAONE,
    "exaone4": MODEL_ARCH.EXAONE4, "nemotron": MODEL_ARCH.NEMOTRON, "dbrx": MODEL_ARCH.DBRX,
    "ernie4_5": MODEL_ARCH.ERNIE4_5, "ernie4_5_moe": MODEL_ARCH.ERNIE4_5_MOE, "hunyuan_v1_moe": MODEL_ARCH.HUNYUAN_MOE,
    "bailing_moe": MODEL_ARCH.BAILINGMOE, "lfm2": MODEL_ARCH.LFM2, "seed_oss": MODEL_ARCH.SEED_OSS,
    "apertus": MODEL_ARCH.APERTUS, "arcee": MODEL_ARCH.ARCEE, "stablelm": MODEL_ARCH.STABLELM,
    "gpt2": MODEL_ARCH.GPT2, "gptj": MODEL_ARCH.GPTJ, "gpt_neox": MODEL_ARCH.GPTNEOX, "bloom": MODEL_ARCH.BLOOM,
    "mpt": MODEL_ARCH.MPT, "starcoder": MODEL_ARCH.STARCODER, "baichuan": MODEL_ARCH.BAICHUAN,
    "minimax_m2": MODEL_ARCH.MINIMAXM2, "dots1": MODEL_ARCH.DOTS1,
}


def gguf_arch(spec: ModelSpec) -> str | None:
    """The gguf architecture (general.architecture) the converter writes for this model (None when unknown)."""
    if (spec.family or "").lower() in _ARCH_BY_MODEL_TYPE:
        return _ARCH_BY_MODEL_TYPE[(spec.family or "").lower()]
    shipped = gguf_names_table.catalog_arch(spec)
    if shipped is not None:
        return shipped or None
    return arch_of_family(spec.family)


def arch_of_family(family: str | None) -> str | None:
    """HF model_type or GGUF architecture name → the gguf architecture name (gguf-py's list), None if unknown."""
    fam = (family or "").lower()
    if fam in _ARCH_BY_MODEL_TYPE:
        return _ARCH_BY_MODEL_TYPE[fam]
    from gguf import MODEL_ARCH_NAMES

    names = set(MODEL_ARCH_NAMES.values())
    return next((k for k in (fam, fam.replace("_", "-"), fam.replace("_", "")) if k in names), None)


def _name_map(spec: ModelSpec, arch: str):
    """gguf-py's TensorNameMap for the architecture, or for a catalog model the same answers from the shipped
    table (quant/gguf_names_table.py), which needs no gguf import."""
    shipped = gguf_names_table.catalog_name_map(spec, arch)
    return shipped if shipped is not None else _gguf_name_map(arch, spec.n_layers)


@lru_cache(maxsize=64)
def _gguf_name_map(arch: str, n_blocks: int):
    from gguf import MODEL_ARCH_NAMES, get_tensor_name_map

    by_name = {name: a for a, name in MODEL_ARCH_NAMES.items()}
    return get_tensor_name_map(by_name[arch], n_blocks)


_DROP_ROLES = frozenset({"vision", "projector", "audio"})
_EXPERT_ID = re.compile(r"^(?P<pre>.*\.experts)\.(?P<e>\d+)\.(?P<post>.+)$")
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks|block|layer)\.(\d+)\.")

# Fallback when gguf-py's map does not know a name: the GGUF stem per role.
_STEM_BY_ROLE = {
    "embed": "token_embd", "lm_head": "output", "pos_embed": "position_embd",
    "attn_q": "attn_q", "attn_k": "attn_k", "attn_v": "attn_v", "attn_o": "attn_output", "attn_qkv": "attn_qkv",
    "attn_q_a": "attn_q_a", "attn_q_b": "attn_q_b", "attn_kv_a": "attn_kv_a_mqa", "attn_kv_b": "attn_kv_b",
    "attn_sinks": "attn_sinks", "ffn_gate": "ffn_gate", "ffn_up": "ffn_up", "ffn_down": "ffn_down",
    "ffn_gate_up": "ffn_up", "expert_gate": "ffn_gate_exps", "expert_up": "ffn_up_exps",
    "expert_down": "ffn_down_exps", "expert_gate_up": "ffn_gate_up_exps", "shared_gate": "ffn_gate_shexp",
    "shared_up": "ffn_up_shexp", "shared_down": "ffn_down_shexp", "router": "ffn_gate_inp",
    "ssm_in": "ssm_in", "ssm_out": "ssm_out", "ssm_conv": "ssm_conv1d",
}

# prepare_tensors (convert_hf_to_gguf.py): tensors always written as F32 whatever --outtype says.
_F32_STEMS = ("ffn_gate_inp", "ffn_gate_inp_shexp", "position_embd", "token_types", "ssm_conv1d",
              "shortconv.conv", "time_mix_first", "time_mix_w1", "time_mix_w2", "time_mix_decay_w1",
              "time_mix_decay_w2", "time_mix_lerp_fused")

# Gemma 3's checkpoint embeds 262,208 rows (image tokens included); the converter keeps only the
# tokenizer's 262,144 (Gemma3Model.modify_tensors: "remove OOV rows in token_embd").
_GEMMA3_TOKENIZER = 262_144


def _hf_layer(name: str) -> int | None:
    m = _LAYER.search(name)
    return int(m.group(1)) if m else None


def _normalize_hf_name(name: str) -> str:
    # multimodal wrappers keep the text model under language_model (converters strip it)
    for old, new in (("model.language_model.", "model."), ("language_model.model.", "model."),
                     ("language_model.", "")):
        if name.startswith(old):
            return new + name[len(old):]
    return name


def _storage_type(gguf_name: str, shape: tuple[int, ...], base: str) -> str:
    """prepare_tensors: what the converter writes this tensor as (base = the checkpoint's 16-bit type)."""
    dims = [d for d in shape if d != 1] if len(shape) > 1 else list(shape)   # data_torch.squeeze()
    if len(dims) <= 1 or gguf_name.endswith("_norm.weight") or not gguf_name.endswith(".weight"):
        return "F32"
    stem = gguf_name.rsplit(".", 1)[0]
    stem = stem.split(".", 2)[2] if stem.startswith("blk.") else stem
    if stem in _F32_STEMS or stem.startswith("time_mix_lerp"):
        return "F32"
    return base


def _role_of(gguf_name: str, fallback: str) -> tuple[str, int | None]:
    role, layer = tensor_role(gguf_name)
    return (role if role != "other" else fallback), layer


def _map_name(nmap, name: str, role: str, layer: int | None) -> str:
    """HF parameter name → GGUF name (gguf-py TensorNameMap, then a role-based fallback)."""
    base, suffix = name, ""
    for s in (".weight", ".bias"):
        if name.endswith(s):
            base, suffix = name[: -len(s)], s
            break
    else:
        if name.endswith(".dt_bias"):           # Mamba-2: the converter renames .dt_bias to .dt_proj.bias
            base, suffix = name[: -len(".dt_bias")] + ".dt_proj", ".bias"
        elif name.endswith("_bias"):            # gpt-oss: experts.gate_up_proj_bias
            base, suffix = name[: -len("_bias")], ".bias"
        elif name.endswith((".A_log", ".D")):   # Mamba: written as blk.N.ssm_a / ssm_d, no suffix (map_tensor_name)
            suffix = ""
        else:
            suffix = ".weight"
    mapped = nmap.get_name(base) if nmap is not None else None
    if mapped is None and name.endswith(".pre_ff_layernorm.weight") and layer is not None:
        # Falcon-H1: gguf-py maps the whole name "model.layers.{bid}.pre_ff_layernorm.weight" (FFN_PRE_NORM), so the
        # converter writes blk.N.ffn_norm with no suffix, the name src/models/falcon-h1.cpp asks for
        return f"blk.{layer}.ffn_norm"
    if mapped is None and role in _STEM_BY_ROLE:
        stem = _STEM_BY_ROLE[role]
        global_tensor = stem.startswith(("token_embd", "output", "position"))
        mapped = f"blk.{layer}.{stem}" if layer is not None and not global_tensor else stem
    if mapped is None:
        tail = re.sub(r"[^a-z0-9_]+", "_", base.split(f".{layer}.", 1)[-1].lower()).strip("_")
        if role == "norm" and not tail.endswith("norm"):
            tail += "_norm"
        mapped = f"blk.{layer}.{tail}" if layer is not None else tail
    return mapped + suffix


def gguf_names(spec: ModelSpec) -> list[tuple[str, ...]]:
    """The GGUF tensor(s) each of spec.tensors becomes, in order (names read from a GGUF stay as they are).

    An expert stored per expert in the checkpoint gets the name of the merged 3-D tensor it goes
    into (blk.N.ffn_up_exps.weight); transformers' fused experts.gate_up_proj becomes two tensors,
    ffn_gate_exps and ffn_up_exps, as convert_hf_to_gguf.py splits it, and MLA's kv_b_proj attn_k_b and
    attn_v_b. A llama.cpp --override-tensor
    pattern then matches them as it matches the file's tensors."""
    arch = gguf_arch(spec)
    nmap = _name_map(spec, arch) if arch is not None else None
    out: list[tuple[str, ...]] = []
    for t in spec.tensors:
        if GGUF_NAME.match(t.name):
            out.append((t.name,))
            continue
        if t.role == "expert_gate_up" and t.layer is not None:
            out.append((f"blk.{t.layer}.ffn_gate_exps.weight", f"blk.{t.layer}.ffn_up_exps.weight"))
            continue
        if t.role == "attn_kv_b" and t.layer is not None:
            # MLA: kv_b_proj is written as attn_k_b and attn_v_b (DeepseekV2Model.modify_tensors)
            out.append((f"blk.{t.layer}.attn_k_b.weight", f"blk.{t.layer}.attn_v_b.weight"))
            continue
        name = _normalize_hf_name(t.name)
        m = _EXPERT_ID.match(name)
        if m:
            name = f"{m.group('pre')}.{m.group('post')}"
        out.append((_map_name(nmap, name, t.role, t.layer),))
    return out


def gguf_tensors(spec: ModelSpec, *, base_type: str = "BF16") -> list[TensorInfo]:
    """The tensors as convert_hf_to_gguf.py would write them: GGUF names, shapes, storage types.

    Shapes stay in PyTorch order (outermost first, row length last; 3-D experts are
    ``(n_expert, rows, row_length)``), as the rest of runlocal keeps them. ``dtype`` is the
    converter's storage type (F32 or ``base_type``) and ``nbytes`` its size. A spec read from a
    GGUF file passes through unchanged (its F32 tensors stay F32, the rest count as ``base_type``).
    """
    if not spec.tensors:
        raise InputError(f"{spec.id}: the model description has no tensors to convert")
    arch = gguf_arch(spec)
    nmap = _name_map(spec, arch) if arch is not None else None
    out: list[TensorInfo] = []

    def emit(name: str, shape: tuple[int, ...], role: str) -> None:
        dtype = _storage_type(name, shape, base_type)
        r, layer = _role_of(name, role)
        out.append(TensorInfo(name, tuple(shape), r, layer, dtype, tensor_bytes(tuple(shape), Q[dtype])))

    if all(GGUF_NAME.match(t.name) or t.role in _DROP_ROLES for t in spec.tensors):
        for t in spec.tensors:
            if t.role in _DROP_ROLES:
                continue
            dtype = "F32" if (t.dtype or "").upper() == "F32" else base_type
            out.append(replace(t, dtype=dtype, nbytes=tensor_bytes(t.shape, Q[dtype])))
        return out

    hidden = spec.hidden_size
    experts: dict[tuple[str, str], list[TensorInfo]] = {}
    order: list[tuple[str, object]] = []
    for t in spec.tensors:
        if t.role in _DROP_ROLES or t.name.endswith(("rotary_emb.inv_freq", "_scales")):
            continue
        name = _normalize_hf_name(t.name)
        if name.startswith(("vision_tower.", "multi_modal_projector.", "vision_model.", "visual.", "audio_tower.")):
            continue
        if t.role == "lm_head" and spec.tie_word_embeddings:
            continue
        m = _EXPERT_ID.match(name)
        if m:
            key = (m.group("pre"), m.group("post"))
            if key not in experts:
                experts[key] = []
                order.append(("experts", key))
            experts[key].append(t)
            continue
        order.append(("one", (name, t)))

    mla = _mla_dims(spec) if arch == MODEL_ARCH.DEEPSEEK2 else None
    probs_bias = (arch == MODEL_ARCH.DEEPSEEK2 and (spec.family or "").lower() in _ROUTER_BIAS_FAMILIES
                  and not any("e_score_correction" in t.name for t in spec.tensors))
    for kind, item in order:
        if kind == "experts":
            pre, post = item  # type: ignore[misc]
            group = experts[(pre, post)]
            first = group[0]
            merged = TensorInfo(f"{pre}.{post}", (len(group), *first.shape), first.role, first.layer)
            _emit_hf(emit, nmap, merged, merged.name, hidden)
            continue
        name, t = item  # type: ignore[misc]
        layer = t.layer if t.layer is not None else _hf_layer(name)
        if mla is not None and name.endswith("kv_b_proj.weight") and len(t.shape) == 2 and layer is not None:
            # DeepseekV2Model.modify_tensors: kv_b viewed (n_head_kv, nope + v, kv_lora), split at nope;
            # the K part transposed: k_b (n_head_kv, kv_lora, nope), v_b (n_head_kv, v, kv_lora)
            n_head_kv, nope, v_dim = mla
            kv_lora = t.shape[1]
            if t.shape[0] == n_head_kv * (nope + v_dim):
                emit(f"blk.{layer}.attn_k_b.weight", (n_head_kv, kv_lora, nope), t.role)
                emit(f"blk.{layer}.attn_v_b.weight", (n_head_kv, v_dim, kv_lora), t.role)
                continue
        _emit_hf(emit, nmap, t, name, hidden)
        if probs_bias and t.role == "router" and layer is not None and len(t.shape) == 2:
            # e_score_correction_bias (a buffer in transformers, a tensor in the checkpoint) → exp_probs_b.bias
            emit(f"blk.{layer}.exp_probs_b.bias", (t.shape[0],), "router")

    if arch == MODEL_ARCH.GEMMA3:
        out = [replace(t, shape=(min(t.shape[0], _GEMMA3_TOKENIZER), *t.shape[1:]),
                       nbytes=tensor_bytes((min(t.shape[0], _GEMMA3_TOKENIZER), *t.shape[1:]), Q[t.dtype]))
               if t.name == "token_embd.weight" else t for t in out]
    return out


# DeepSeek-V3's router (noaux_tc: DeepseekV3TopkRouter, Kimi K2 too) keeps a per-expert
# e_score_correction_bias; transformers registers it as a buffer, so a spec built from config.json
# lacks it, but the checkpoint stores it and the converter writes it as blk.N.exp_probs_b.bias
# (F32, n_expert), which llama.cpp adds to the router's sigmoid scores before the top-k.
# DeepSeek-V2 ("greedy" / "group_limited_greedy" top-k) has none.
_ROUTER_BIAS_FAMILIES = frozenset({"deepseek_v3", "kimi_k2"})


def _mla_dims(spec: ModelSpec) -> tuple[int, int, int] | None:
    """(n_head_kv, qk_nope_head_dim, v_head_dim) of an MLA checkpoint, from its tensor shapes.

    kv_b_proj is (n_head · (nope + v), kv_lora) and o_proj (hidden, n_head · v); config.json's
    num_key_value_heads equals num_attention_heads in every DeepSeek-V2/V3 and Kimi K2 config
    (the converter's later head_count_kv = 1 is set in set_gguf_parameters, after the split)."""
    n_head = spec.n_heads
    kv_b = next((t for t in spec.tensors if t.name.endswith("kv_b_proj.weight") and len(t.shape) == 2), None)
    o = next((t for t in spec.tensors if t.role == "attn_o" and len(t.shape) == 2
              and (kv_b is None or t.layer == kv_b.layer)), None)
    if kv_b is None or o is None or n_head <= 0 or kv_b.shape[0] % n_head or o.shape[1] % n_head:
        return None
    v_dim = o.shape[1] // n_head
    nope = kv_b.shape[0] // n_head - v_dim
    return (n_head, nope, v_dim) if nope > 0 else None


def _emit_hf(emit, nmap, t: TensorInfo, name: str, hidden: int) -> None:
    """One HF tensor → its GGUF tensor(s): fused expert gate+up split, 3-D experts oriented (E, rows, row length)."""
    layer = t.layer if t.layer is not None else _hf_layer(name)
    shape = tuple(t.shape)
    bias = name.endswith((".bias", "_bias"))
    base = name.removesuffix(".weight").removesuffix(".bias").removesuffix("_bias")
    if base.endswith("_blocks") and len(shape) == 4:          # gpt-oss MXFP4 checkpoint: (E, rows, n_blocks, 16)
        base = base.removesuffix("_blocks")
        shape = (shape[0], shape[1], shape[2] * shape[3] * 2)
        name = base + ".weight"
    stem, _, leaf = base.rpartition(".")
    is_expert = ".experts" in base or t.role.startswith("expert_")
    if base.endswith("shared_mlp.input_linear") and not bias and layer is not None:
        # conversion/granite.py GraniteMoeSharedModel.modify_tensors: the fused shared-expert input splits in two
        half = (shape[0] // 2, *shape[1:])
        emit(f"blk.{layer}.ffn_gate_shexp.weight", half, "shared_gate")
        emit(f"blk.{layer}.ffn_up_shexp.weight", half, "shared_up")
        return
    if leaf == "gate_up_proj" and (is_expert or nmap is None or nmap.get_name(base) is None):
        # fused gate+up (transformers 5 experts, gpt-oss): convert_hf_to_gguf writes gate and up apart
        if bias:
            half = (*shape[:-1], shape[-1] // 2)
        elif len(shape) == 3 and shape[1] == hidden and shape[2] != hidden:
            half = (shape[0], shape[2] // 2, shape[1])          # stored (E, hidden, 2·I)
        else:
            half = (*shape[:-2], shape[-2] // 2, shape[-1])     # stored (…, 2·I, hidden)
        kind = "expert" if is_expert else "ffn"
        for part, role in (("gate_proj", f"{kind}_gate"), ("up_proj", f"{kind}_up")):
            emit(_map_name(nmap, f"{stem}.{part}" + (".bias" if bias else ".weight"), role, layer), half, role)
        return
    if is_expert and not bias and len(shape) == 3:
        # transformers may store experts (E, in, out); GGUF rows are outputs: gate/up rows = I, down rows = hidden
        rows_should_be_hidden = leaf in ("down_proj", "w2")
        if (shape[1] == hidden) != rows_should_be_hidden and shape[1] != shape[2]:
            shape = (shape[0], shape[2], shape[1])
    emit(_map_name(nmap, name, t.role, layer), shape, t.role)


# ------------------------------------------------------------------------------------------------
# step 2: llama-quantize's type per tensor (src/llama-quant.cpp)

_CAT_OUTPUT, _CAT_EMBD, _CAT_Q, _CAT_V, _CAT_K, _CAT_QKV, _CAT_KV_B, _CAT_O = range(8)
_CAT_UP, _CAT_GATE, _CAT_DOWN, _CAT_OTHER = range(8, 12)


def _category(name: str) -> int:
    """tensor_get_category: substring tests, in llama.cpp's order."""
    if name == "output.weight":
        return _CAT_OUTPUT
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return _CAT_EMBD
    for needle, cat in (("attn_qkv.weight", _CAT_QKV), ("attn_kv_b.weight", _CAT_KV_B), ("attn_v.weight", _CAT_V),
                        ("attn_k.weight", _CAT_K), ("attn_q.weight", _CAT_Q), ("attn_output.weight", _CAT_O),
                        ("ffn_up", _CAT_UP), ("ffn_gate", _CAT_GATE), ("ffn_down", _CAT_DOWN)):
        if needle in name:
            return cat
    return _CAT_OTHER


def _is_attn_v(cat: int) -> bool:
    return cat in (_CAT_V, _CAT_QKV, _CAT_KV_B)


_NO_QUANT_SUBSTR = ("_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
                    "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
                    "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
                    "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
                    "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
                    "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
                    "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", ".rel_pos",
                    ".patch_embd", ".patch_merger")


def allows_quantization(t: TensorInfo) -> bool:
    """tensor_allows_quantization: only 2-D/3-D ``*weight`` tensors that are not norms, routers, conv1d …"""
    if len(t.shape) < 2 or not t.name.endswith("weight"):
        return False
    if t.name in ("position_embd.weight", "token_types.weight"):
        return False
    return not any(s in t.name for s in _NO_QUANT_SUBSTR)


def _layer_order(t: TensorInfo) -> tuple[int, str]:
    m = re.match(r"blk\.(\d+)\.", t.name)
    return (int(m.group(1)) if m else -1, t.name)


def _use_more_bits(i_layer: int, n_layers: int) -> bool:
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


class _Mix:
    """quantize_state_impl + llama_tensor_get_type_impl for one model and ftype."""

    _LOW_IQ = ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M")

    def __init__(self, ftype: str, tensors: list[TensorInfo], spec: ModelSpec, imatrix: bool, fused_qkv_as_v: bool):
        self.ftype = ftype
        self.fused_qkv_as_v = fused_qkv_as_v
        self.arch = gguf_arch(spec)
        self.has_imatrix = imatrix
        self.n_expert = spec.n_experts or 0
        self.n_gqa = _n_gqa(spec)
        self.n_layer = spec.n_layers
        self.is_70b = spec.n_layers == 80 and (
            (self.arch == MODEL_ARCH.LLAMA and self.n_gqa > 1)
            or self.arch in (MODEL_ARCH.QWEN2, MODEL_ARCH.DECI, MODEL_ARCH.OLMOE))   # llama-model.cpp load_hparams
        self.falcon = self.arch == MODEL_ARCH.FALCON
        self.tied = not any(t.name == "output.weight" for t in tensors)
        self.n_attention_wv = sum(1 for t in tensors if _is_attn_v(_category(t.name)))
        self.i_attention_wv = self.i_ffn_down = self.i_ffn_gate = self.i_ffn_up = 0
        self.n_fallback = 0

    def _v_branch(self, cat: int) -> bool:
        # 007dbbf3 sends attn_qkv/attn_kv_b through the attn_v rules (category_is_attn_v); every release
        # before the tensor_category refactor matched "attn_v.weight" only (see choose_type)
        return _is_attn_v(cat) if self.fused_qkv_as_v else cat == _CAT_V

    def _layer(self, counter: int, name: str) -> int:
        # layer_info: MoE models read the block number from the name, others count tensors
        if max(1, self.n_expert) > 1:
            m = re.match(r"blk\.(\d+)\.", name)
            if m:
                return int(m.group(1))
        return counter

    def type_for(self, t: TensorInfo, default: GGMLQuantizationType) -> GGMLQuantizationType:
        new = default
        if _is_quantized(default):
            new = self._impl(t, default)
            new = self._fallback(t, new)
        return new

    def _impl(self, t: TensorInfo, new: GGMLQuantizationType) -> GGMLQuantizationType:  # noqa: C901 - mirrors llama.cpp
        ft, name, cat = self.ftype, t.name, _category(t.name)
        n_expert, n_gqa = self.n_expert, self.n_gqa
        if cat == _CAT_OUTPUT or (self.tied and cat == _CAT_EMBD):
            nx = t.shape[-1]
            if ft == "MXFP4_MOE":
                return Q.Q8_0
            if self.falcon or nx % _block(new):
                return Q.Q8_0
            if ft in ("IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"):
                return Q.Q5_K
            return Q.Q6_K if new != Q.Q8_0 else new
        if ft == "MXFP4_MOE":
            # MoE tensors → MXFP4, everything else → Q8_0
            return Q.MXFP4 if len(t.shape) == 3 and t.shape[0] > 1 else Q.Q8_0
        if cat == _CAT_EMBD:
            if ft in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
                return Q.Q2_K
            if ft in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
                return Q.IQ3_S
            if ft in ("TQ1_0", "TQ2_0"):
                return Q.Q4_K
            return new
        if ft in self._LOW_IQ:
            if self._v_branch(cat):
                new = Q.Q4_K if (n_gqa >= 4 or n_expert >= 4) else (Q.IQ3_S if ft in ("IQ2_S", "IQ2_M") else Q.Q2_K)
                self.i_attention_wv += 1
            elif n_expert == 8 and cat == _CAT_K:
                new = Q.Q4_K
            elif cat == _CAT_DOWN:
                if self.i_ffn_down < self.n_layer // 8:
                    new = Q.IQ3_S if ft in ("IQ2_S", "IQ2_M") else Q.Q2_K
                self.i_ffn_down += 1
            elif cat == _CAT_O:
                if n_expert == 8:
                    new = Q.Q5_K
                elif ft in ("IQ1_S", "IQ1_M"):
                    new = Q.IQ2_XXS
                elif ft in ("IQ2_S", "IQ2_M"):
                    new = Q.IQ3_S
            return new
        if self._v_branch(cat):
            i, n = self.i_attention_wv, self.n_attention_wv
            if ft == "Q2_K":
                new = Q.Q4_K if n_gqa >= 4 else Q.Q3_K
            elif ft == "Q2_K_S" and n_gqa >= 4:
                new = Q.Q4_K
            elif ft == "IQ3_XXS":
                new = Q.Q4_K if n_gqa >= 4 else (Q.IQ3_S if not self.has_imatrix else Q.IQ3_XXS)
            elif ft in ("IQ3_XS", "IQ3_S") and n_gqa >= 4:
                new = Q.Q4_K
            elif ft == "IQ3_M":
                new = Q.Q4_K
            elif ft == "Q3_K_M":
                new = Q.Q5_K if i < 2 else Q.Q4_K
            elif ft == "Q3_K_L":
                new = Q.Q5_K
            elif ft in ("IQ4_NL", "IQ4_XS") and n_gqa >= 4:
                new = Q.Q5_K
            elif ft in ("Q4_K_M", "Q5_K_M") and _use_more_bits(i, n):
                new = Q.Q6_K
            elif ft == "Q4_K_S" and i < 4:
                new = Q.Q5_K
            if self.is_70b and new in (Q.Q3_K, Q.Q4_K):
                new = Q.Q5_K                    # 8 heads share attn_v in 70B: more bits nearly free
            if n_expert == 8:
                new = Q.Q8_0                    # 8-expert models: attn_v bumped to Q8_0
            self.i_attention_wv += 1
            return new
        if cat == _CAT_K:
            if n_expert == 8:
                return Q.Q8_0
            if ft == "IQ3_XS":
                return Q.IQ3_XXS
            if ft == "IQ3_XXS":
                return Q.IQ2_S
            return new
        if cat == _CAT_Q:
            if ft == "IQ3_XS":
                return Q.IQ3_XXS
            if ft == "IQ3_XXS":
                return Q.IQ2_S
            return new
        if cat == _CAT_DOWN:
            il, n = self._layer(self.i_ffn_down, name), self.n_layer
            if ft == "Q2_K":
                new = Q.Q3_K
            elif ft == "Q2_K_S":
                if il < n // 8:
                    new = Q.Q4_K
            elif ft == "IQ3_XXS" and not self.has_imatrix:
                new = Q.Q4_K if il < n // 8 else Q.Q3_K
            elif ft == "Q3_K_M":
                new = Q.Q5_K if il < n // 16 else (Q.Q4_K if (not self.falcon or _use_more_bits(il, n)) else Q.Q3_K)
            elif ft == "IQ3_M" and (il < n // 8 or (n_expert == 8 and _use_more_bits(il, n))):
                new = Q.Q4_K
            elif ft == "Q3_K_L":
                new = Q.Q4_K if self.falcon else Q.Q5_K
            elif ft == "Q4_K_M":
                if self.falcon:
                    new = Q.Q6_K if il < n // 16 else (Q.Q5_K if _use_more_bits(il, n) else Q.Q4_K)
                elif _use_more_bits(il, n):
                    new = Q.Q6_K
            elif il < n // 8 and ft in ("IQ4_NL", "IQ4_XS") and not self.has_imatrix:
                new = Q.Q5_K
            elif ft == "Q5_K_M" and _use_more_bits(il, n):
                new = Q.Q6_K
            elif ft == "Q4_K_S" and not self.falcon and il < n // 8:
                new = Q.Q5_K
            elif ft in ("Q4_0", "Q5_0") and self.has_imatrix and il < n // 8:
                new = Q.Q4_1 if ft == "Q4_0" else Q.Q5_1
            self.i_ffn_down += 1
            return new
        if cat == _CAT_O:
            if not self.falcon:
                if n_expert == 8:
                    if ft in ("Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M",
                              "IQ3_S", "IQ3_M", "IQ4_XS"):
                        new = Q.Q5_K
                else:
                    new = {"Q2_K": Q.Q3_K, "IQ3_XXS": Q.IQ3_S, "Q3_K_M": Q.Q4_K, "Q3_K_L": Q.Q5_K,
                           "IQ3_M": Q.Q4_K}.get(ft, new)
            elif ft == "Q3_K_L":
                new = Q.Q4_K
            return new
        if cat == _CAT_QKV:
            if ft in ("Q3_K_M", "Q3_K_L", "IQ3_M"):
                return Q.Q4_K
            return {"Q4_K_M": Q.Q5_K, "Q5_K_M": Q.Q6_K}.get(ft, new)
        if cat in (_CAT_GATE, _CAT_UP):
            counter = self.i_ffn_gate if cat == _CAT_GATE else self.i_ffn_up
            il, n = self._layer(counter, name), self.n_layer
            if ft == "IQ3_XS" and n // 8 <= il < 7 * n // 8:
                new = Q.IQ3_XXS
            if cat == _CAT_GATE:
                self.i_ffn_gate += 1
            else:
                self.i_ffn_up += 1
            return new
        return new

    def _fallback(self, t: TensorInfo, new: GGMLQuantizationType) -> GGMLQuantizationType:
        """tensor_type_fallback: a row length the block size does not divide gets a compatible type."""
        ncols = t.shape[-1]
        if ncols % _block(new) == 0:
            return new
        self.n_fallback += 1
        if new in (Q.IQ1_S, Q.IQ1_M, Q.IQ2_XXS, Q.IQ2_XS, Q.IQ2_S, Q.IQ3_XXS, Q.IQ3_S, Q.IQ4_XS):
            ret = Q.IQ4_NL
        elif new in (Q.Q2_K, Q.Q3_K, Q.TQ1_0, Q.TQ2_0):
            ret = Q.Q4_0
        elif new == Q.Q4_K:
            ret = Q.Q5_0
        elif new == Q.Q5_K:
            ret = Q.Q5_1
        elif new == Q.Q6_K:
            ret = Q.Q8_0
        else:
            # llama.cpp throws ("no tensor type fallback is defined"); the converter writes F16 then
            ret = Q.F16
        if ncols % _block(ret):
            ret = Q.F16                          # "must use F16 due to unusual shape"
        return ret


def _n_gqa(spec: ModelSpec) -> int:
    """hparams.n_gqa() of layer 0: heads per KV head. MLA: 1, as in the legacy files with attn_kv_b (their
    head_count_kv was n_head); current ones write head_count_kv = 1 but have no attn_v-like tensor to bump."""
    att = next((lay.attention for lay in spec.layers if lay.attention is not None), None)
    if att is None or att.kind == "mla" or att.n_kv_heads <= 0 or spec.n_heads <= 0:
        return 1
    return max(1, spec.n_heads // att.n_kv_heads)


def default_imatrix(ftype: str) -> bool:
    """Whether published files of this type are usually made with an importance matrix.

    The IQ types are (IQ1/IQ2/IQ3_XXS cannot be made without one); K-quants and legacy types are
    often made without. It only changes IQ3_XXS attn_v/ffn_down, the first eighth of ffn_down in
    IQ4_NL/IQ4_XS, and Q4_0/Q5_0's first eighth of ffn_down.
    """
    return ftype.startswith("IQ")


def choose_type(ftype: str, tensors: list[TensorInfo], spec: ModelSpec, *, imatrix: bool | None = None,
                fused_qkv_as_v: bool = False) -> list[tuple[TensorInfo, GGMLQuantizationType]]:
    """llama-quantize's type for each tensor (in the order given) under ``ftype``.

    ``imatrix``: whether an importance matrix is used (default: ``default_imatrix``).
    ``fused_qkv_as_v``: the tensor_category refactor (in 007dbbf3) made ``category_is_attn_v`` cover
    ``attn_qkv`` and ``attn_kv_b``, so they now take the attn_v rules and the ``ATTENTION_QKV`` branch
    (Q4_K_M → Q5_K, Q5_K_M → Q6_K, Q3_K_M/L → Q4_K) became unreachable. Every earlier release
    (e.g. 8784689f), which made the files published on the Hub, matched ``attn_v.weight`` only and
    left ``attn_kv_b`` at the default type; that is the default here. Only fused-QKV models (Phi-3,
    Falcon, GPT-NeoX …) and legacy MLA files read from disk (a fused ``attn_kv_b``; the converter
    has written ``attn_k_b`` / ``attn_v_b`` instead since 2025) are affected.
    """
    ft = normalize_ftype(ftype)
    default = Q[_DEFAULT_TYPE[ft]]
    mix = _Mix(ft, tensors, spec, default_imatrix(ft) if imatrix is None else imatrix, fused_qkv_as_v)
    chosen: dict[int, GGMLQuantizationType] = {}
    for idx in sorted(range(len(tensors)), key=lambda i: _layer_order(tensors[i])):   # weights_map order
        t = tensors[idx]
        stored = Q[t.dtype] if t.dtype and hasattr(Q, t.dtype) else Q.BF16
        chosen[idx] = mix.type_for(t, default) if allows_quantization(t) else stored
    return [(t, chosen[i]) for i, t in enumerate(tensors)]


# ------------------------------------------------------------------------------------------------
# header estimate

# Tokenizer metadata as convert_hf_to_gguf writes it (gguf.SpecialVocab / _set_vocab_*):
#   tokenizer.ggml.tokens      one string per token: 8-byte length + UTF-8 bytes
#   tokenizer.ggml.token_type  one int32 per token
#   tokenizer.ggml.scores      one float32 per token (SentencePiece vocabularies)
#   tokenizer.ggml.merges      one string "a b" per BPE merge (byte-level BPE vocabularies)
# Text lengths and merge counts are estimates, not read from any tokenizer: 9 bytes of text per
# token and 10 per merge string, fitted to the published Qwen3 and Llama 3 files in
# tests/data/gguf_published_sizes.json (whose headers then come out within 2 KB and 50 KB).
# Tokenizers converted from tiktoken ranks (Llama 3: 280,147 merges for 128,256 tokens; o200k;
# Tekken) carry about 2.2 merges per token, other BPE vocabularies about one.
_TOKEN_TEXT = 9
_MERGE_TEXT = 10
_FIXED_KV = 6_000          # general.*, <arch>.* hyperparameters, special token ids, chat template


def _tokenizer_kind(spec: ModelSpec, arch: str | None) -> tuple[str, float]:
    """('spm' | 'bpe', merges per token)."""
    v = spec.vocab_size
    if arch in (MODEL_ARCH.GEMMA, MODEL_ARCH.GEMMA2, MODEL_ARCH.GEMMA3, MODEL_ARCH.GEMMA3N):
        return "spm", 0.0
    if arch in (MODEL_ARCH.LLAMA, MODEL_ARCH.PHI3) and v <= 65_536 and v not in (49_152, 49_155):
        return "spm", 0.0                   # Llama 2, Mistral v0.1-v0.3, Mixtral, Phi-3, Yi
    if arch == MODEL_ARCH.GPT_OSS or (arch == MODEL_ARCH.LLAMA and v >= 128_000):
        return "bpe", 2.2                   # tiktoken-derived: Llama 3, o200k, Tekken
    return "bpe", 1.0


def header_bytes(spec: ModelSpec, typed: list[tuple[TensorInfo, GGMLQuantizationType]]) -> int:
    """Estimated GGUF header: fixed fields, tensor infos (exact), key/value metadata (estimated)."""
    n = 24                                                          # magic, version, n_tensors, n_kv
    for t, _ in typed:                                              # name, n_dims, dims, type, offset
        n += 8 + len(t.name.encode()) + 4 + 8 * len(t.shape) + 4 + 8
    kind, merges_per_token = _tokenizer_kind(spec, gguf_arch(spec))
    v = spec.vocab_size
    n += _FIXED_KV + v * (8 + _TOKEN_TEXT) + v * 4                  # tokens + token_type
    if kind == "spm":
        n += v * 4                                                  # scores
    else:
        n += int(v * merges_per_token) * (8 + _MERGE_TEXT)          # merges
    return _pad(n)


# ------------------------------------------------------------------------------------------------
# public totals

def predict_gguf_bytes(spec: ModelSpec, ftype: str, *, include_metadata: bool = True,
                       imatrix: bool | None = None, fused_qkv_as_v: bool = False) -> int:
    """Predicted size of the single GGUF file llama-quantize writes for ``spec`` under ``ftype``.

    Tensor data is exact (each tensor padded to 32 bytes); the header is estimated (header_bytes).
    """
    tensors = gguf_tensors(spec)
    typed = choose_type(ftype, tensors, spec, imatrix=imatrix, fused_qkv_as_v=fused_qkv_as_v)
    data = sum(_pad(tensor_bytes(t.shape, q)) for t, q in typed)
    return data + (header_bytes(spec, typed) if include_metadata else 0)


def weight_bytes_by_type(spec: ModelSpec, ftype: str, *, imatrix: bool | None = None,
                         fused_qkv_as_v: bool = False) -> dict[str, int]:
    """Tensor bytes per ggml type (e.g. {'Q4_K': …, 'Q6_K': …, 'F32': …}), largest first."""
    tensors = gguf_tensors(spec)
    totals: dict[str, int] = {}
    for t, q in choose_type(ftype, tensors, spec, imatrix=imatrix, fused_qkv_as_v=fused_qkv_as_v):
        totals[q.name] = totals.get(q.name, 0) + tensor_bytes(t.shape, q)
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


@lru_cache(maxsize=32)
def gguf_view(spec: ModelSpec, ftype: str) -> ModelSpec | None:
    """``spec`` as the GGUF llama-quantize would write under ``ftype``: GGUF tensor names and types, and the
    family as general.architecture. What llama.cpp's graph of a checkpoint or catalog model looks like
    (runtimes/ggml_graph.py traces it); None when the architecture or the type has no GGUF equivalent."""
    arch = gguf_arch(spec)
    if arch is None or not spec.tensors:
        return None
    try:
        ftype = normalize_ftype(ftype)
        typed = choose_type(ftype, gguf_tensors(spec), spec)
    except (InputError, KeyError, ValueError):
        return None
    tensors = tuple(replace(t, dtype=q.name, nbytes=tensor_bytes(t.shape, q)) for t, q in typed)
    return replace(spec, tensors=tensors, family=arch)
