"""Step 1 of quant/gguf_mix.py: the tensors convert_hf_to_gguf.py writes for a model (names, shapes, storage
types); see gguf_mix's docstring for the llama.cpp sources and commits it follows."""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from ..errors import InputError
from ..memo import IdMemo
from ..model.gguf import tensor_role
from ..model.spec import GGUF_NAME, ModelSpec, TensorInfo
from . import gguf_names_table
from .ggml_types import Arch as MODEL_ARCH
from .gguf_ftypes import Q, tensor_bytes

# ------------------------------------------------------------------------------------------------
# step 1: the converter's tensor list

# HF model_type → gguf architecture (convert_hf_to_gguf.py's @ModelBase.register classes).
_ARCH_BY_MODEL_TYPE: dict[str, str] = {
    "llama": MODEL_ARCH.LLAMA, "mistral": MODEL_ARCH.LLAMA, "mixtral": MODEL_ARCH.LLAMA,
    "mistral3": MODEL_ARCH.LLAMA, "llava": MODEL_ARCH.LLAMA, "yi": MODEL_ARCH.LLAMA,
    "llama4": MODEL_ARCH.LLAMA4, "llama4_text": MODEL_ARCH.LLAMA4,
    "qwen2": MODEL_ARCH.QWEN2, "qwen2_moe": MODEL_ARCH.QWEN2MOE,
    "qwen2_vl": MODEL_ARCH.QWEN2VL, "qwen2_5_vl": MODEL_ARCH.QWEN2VL, "qwen3": MODEL_ARCH.QWEN3,
    "qwen3_moe": MODEL_ARCH.QWEN3MOE,
    "qwen3_vl": MODEL_ARCH.QWEN3VL, "qwen3_vl_moe": MODEL_ARCH.QWEN3VLMOE, "qwen3_next": MODEL_ARCH.QWEN3NEXT,
    "qwen3_5": MODEL_ARCH.QWEN35, "qwen3_5_text": MODEL_ARCH.QWEN35, "qwen3_5_moe": MODEL_ARCH.QWEN35MOE,
    "qwen3_5_moe_text": MODEL_ARCH.QWEN35MOE, "gemma": MODEL_ARCH.GEMMA,
    "gemma2": MODEL_ARCH.GEMMA2, "gemma3": MODEL_ARCH.GEMMA3, "gemma3_text": MODEL_ARCH.GEMMA3,
    "gemma3n": MODEL_ARCH.GEMMA3N, "phi3": MODEL_ARCH.PHI3, "phimoe": MODEL_ARCH.PHIMOE, "phi": MODEL_ARCH.PHI2,
    "gpt_oss": MODEL_ARCH.GPT_OSS, "deepseek_v2": MODEL_ARCH.DEEPSEEK2, "deepseek_v3": MODEL_ARCH.DEEPSEEK2,
    "kimi_k2": MODEL_ARCH.DEEPSEEK2, "deepseek": MODEL_ARCH.DEEPSEEK, "granite": MODEL_ARCH.GRANITE,
    "granitemoe": MODEL_ARCH.GRANITE_MOE, "granitemoehybrid": MODEL_ARCH.GRANITE_HYBRID,
    "olmo": MODEL_ARCH.OLMO, "olmo2": MODEL_ARCH.OLMO2, "olmo3": MODEL_ARCH.OLMO2, "olmoe": MODEL_ARCH.OLMOE,
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
    "minimax_m2": MODEL_ARCH.MINIMAXM2, "dots1": MODEL_ARCH.DOTS1, "nemotron_h": MODEL_ARCH.NEMOTRON_H,
}


def gguf_arch(spec: ModelSpec) -> str | None:
    """The gguf architecture (general.architecture) the converter writes for this model (None when unknown)."""
    if _is_nemotron_h_moe(spec):
        return MODEL_ARCH.NEMOTRON_H_MOE
    if (spec.family or "").lower() in _ARCH_BY_MODEL_TYPE:
        return _ARCH_BY_MODEL_TYPE[(spec.family or "").lower()]
    shipped = gguf_names_table.catalog_arch(spec)
    if shipped is not None:
        return shipped or None
    return arch_of_family(spec.family)


def _is_nemotron_h_moe(spec: ModelSpec) -> bool:
    # conversion/nemotron.py NemotronHModel: MoE params pick the MoE arch
    return (spec.family or "").lower() == "nemotron_h" and bool(spec.n_experts)


def converter_arch(spec: ModelSpec) -> str | None:
    """gguf_arch without the shipped names table (what builds that table)."""
    return MODEL_ARCH.NEMOTRON_H_MOE if _is_nemotron_h_moe(spec) else arch_of_family(spec.family)


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
    if mapped is None and nmap is not None and base.startswith("model.layers."):
        # Nemotron-H: transformers names its layers model.layers.N.mixer.*, the checkpoint and gguf-py backbone.*
        # (conversion/nemotron.py filter_tensors renames the one to the other)
        mapped = nmap.get_name("backbone." + base[len("model."):])
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


def gguf_names(spec: ModelSpec) -> tuple[tuple[str, ...], ...]:
    """names_of_gguf as the one tuple kept per spec object: a --fit search over several GPUs places the model's
    tensors by its -ot rules at every probe (llamacpp_layout matches each rule against these names), ~100 times
    for one check of a 94-layer MoE (~1,000 tensors mapped each time)."""
    return _NAMES.get(spec, None, lambda: tuple(names_of_gguf(spec)))


_NAMES = IdMemo(64)


def names_of_gguf(spec: ModelSpec) -> list[tuple[str, ...]]:
    """The GGUF tensor(s) each of spec.tensors becomes, in order (names read from a GGUF stay as they are).

    An expert stored per expert in the checkpoint gets the name of the merged 3-D tensor it goes
    into (blk.N.ffn_up_exps.weight); transformers' fused experts.gate_up_proj becomes two tensors,
    ffn_gate_exps and ffn_up_exps, as convert_hf_to_gguf.py splits it, and MLA's kv_b_proj attn_k_b and
    attn_v_b, and gpt-oss's fused experts.gate_up_proj_bias ffn_gate_exps.bias and ffn_up_exps.bias (as gguf_tensors
    writes them). A llama.cpp --override-tensor pattern, or --n-cpu-moe's, then matches them as it matches the file's
    tensors. (The name map is asked for only when a name is not a GGUF one already: for a spec read from a GGUF it
    would import gguf-py.)"""
    nmap, mapped = None, False
    out: list[tuple[str, ...]] = []
    for t in spec.tensors:
        if GGUF_NAME.match(t.name):
            out.append((t.name,))
            continue
        if not mapped:
            arch = gguf_arch(spec)
            nmap, mapped = (_name_map(spec, arch) if arch is not None else None), True
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
        stem, gate_up = name.removesuffix("_bias").removesuffix(".bias").rpartition(".")[::2]
        if t.role == "bias" and gate_up == "gate_up_proj" and ".experts" in stem:
            # gpt-oss's fused expert bias: written as the gate and up halves (_emit_hf)
            out.append((_map_name(nmap, f"{stem}.gate_proj.bias", "expert_gate", t.layer),
                        _map_name(nmap, f"{stem}.up_proj.bias", "expert_up", t.layer)))
            continue
        out.append((_map_name(nmap, name, t.role, t.layer),))
    return out


def _in_checkpoint_order(spec: ModelSpec):
    """The tensors the converter writes, in the checkpoint's order: ``(prefix, suffix)`` of an expert group (its
    members in ``experts``, merged into one 3-D tensor as the converter does) or ``(name, tensor)`` of one tensor;
    vision/audio towers, dropped roles and a tied lm_head left out."""
    experts: dict[tuple[str, str], list[TensorInfo]] = {}
    order: list[tuple[str, str] | tuple[str, TensorInfo]] = []
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
                order.append(key)
            experts[key].append(t)
            continue
        order.append((name, t))
    return experts, order


def gguf_tensors(spec: ModelSpec, *, base_type: str = "BF16") -> list[TensorInfo]:
    """The tensors as convert_hf_to_gguf.py would write them: GGUF names, shapes, storage types.

    Shapes stay in PyTorch order (outermost first, row length last; 3-D experts are
    ``(n_expert, rows, row_length)``), as the rest of runlocal keeps them. ``dtype`` is the
    converter's storage type (F32 or ``base_type``) and ``nbytes`` its size. A spec read from a
    GGUF file passes through unchanged (its F32 tensors stay F32, the rest count as ``base_type``).
    """
    return list(converted(spec, base_type))


def converted(spec: ModelSpec, base_type: str = "BF16") -> tuple[TensorInfo, ...]:
    """gguf_tensors as the one tuple kept per spec object (not a copy): gguf_mix.gguf_view types it under each ftype a
    plan and its fixes ask about, and the lru_cache behind hashes the whole spec, every tensor, on each call."""
    return _CONVERTED.get(spec, base_type, lambda: _gguf_tensors(spec, base_type))


_CONVERTED = IdMemo(64)


# A plan and its fixes view one model under several ftypes (gguf_mix.gguf_view per type): the conversion itself
# depends on the spec alone, and for an 80-layer dense model it is ~2,900 tensors (~15 ms), so it is kept.
@lru_cache(maxsize=16)
def _gguf_tensors(spec: ModelSpec, base_type: str) -> tuple[TensorInfo, ...]:
    if not spec.tensors:
        raise InputError(f"{spec.id}: the model description has no tensors to convert")
    arch = gguf_arch(spec)
    nmap = _name_map(spec, arch) if arch is not None else None
    out: list[TensorInfo] = []

    # gpt-oss ships its experts in MXFP4; the converter writes them as MXFP4 whatever --outtype asks
    # (conversion/gpt_oss.py GptOssModel.repack_mxfp4: add_tensor(..., raw_dtype=GGMLQuantizationType.MXFP4))
    mxfp4_experts = (spec.file_quant or "").lower() == "mxfp4"

    def emit(name: str, shape: tuple[int, ...], role: str) -> None:
        dtype = _storage_type(name, shape, base_type)
        if mxfp4_experts and role.startswith("expert_") and len(shape) == 3 and name.endswith(".weight"):
            dtype = "MXFP4"
        r, layer = _role_of(name, role)
        out.append(TensorInfo(name, tuple(shape), r, layer, dtype, tensor_bytes(tuple(shape), Q[dtype])))

    if all(GGUF_NAME.match(t.name) or t.role in _DROP_ROLES for t in spec.tensors):
        for t in spec.tensors:
            if t.role in _DROP_ROLES:
                continue
            dtype = "F32" if (t.dtype or "").upper() == "F32" else base_type
            out.append(replace(t, dtype=dtype, nbytes=tensor_bytes(t.shape, Q[dtype])))
        return tuple(out)

    hidden = spec.hidden_size
    experts, order = _in_checkpoint_order(spec)

    mla = _mla_dims(spec) if arch == MODEL_ARCH.DEEPSEEK2 else None
    probs_bias = (arch in (MODEL_ARCH.DEEPSEEK2, MODEL_ARCH.MINIMAXM2, MODEL_ARCH.GLM4_MOE, MODEL_ARCH.NEMOTRON_H_MOE)
                  and (spec.family or "").lower() in _ROUTER_BIAS_FAMILIES
                  and not any("e_score_correction" in t.name for t in spec.tensors))
    for name, item in order:
        if isinstance(item, str):
            group = experts[(name, item)]
            first = group[0]
            merged = TensorInfo(f"{name}.{item}", (len(group), *first.shape), first.role, first.layer)
            _emit_hf(emit, nmap, merged, merged.name, hidden)
            continue
        t = item
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
                       nbytes=tensor_bytes((min(t.shape[0], _GEMMA3_TOKENIZER), *t.shape[1:]), Q[t.dtype or base_type]))
               if t.name == "token_embd.weight" else t for t in out]
    return tuple(out)


# DeepSeek-V3's router (noaux_tc: DeepseekV3TopkRouter, Kimi K2 too) keeps a per-expert
# e_score_correction_bias; transformers registers it as a buffer, so a spec built from config.json
# lacks it, but the checkpoint stores it and the converter writes it as blk.N.exp_probs_b.bias
# (F32, n_expert), which llama.cpp adds to the router's sigmoid scores before the top-k.
# DeepSeek-V2 ("greedy" / "group_limited_greedy" top-k) has none.
# MiniMax M2 (use_routing_bias), GLM-4.5 (Glm4MoeTopkRouter) and Nemotron-H MoE keep the same buffer
# (conversion/minimax.py, glm.py write it through the generic name map; nemotron.py as mixer.gate.e_score_correction).
_ROUTER_BIAS_FAMILIES = frozenset({"deepseek_v3", "kimi_k2", "minimax_m2", "glm4_moe", "nemotron_h"})


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


