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

Layout: config access (_Cfg), a tensor collector (_Tensors), shared blocks (attention, MLP, experts,
MLA, Mamba 1/2 mixers, gated delta-net), vision towers, then one short builder per family and the
FAMILIES table that spec_from_config dispatches on. Unknown model types that look like a plain
Llama decoder are read through the Llama builder and say so in ``spec.notes``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import ModelFormatError
from .limits import _shown as shown
from .limits import check_config_value, check_heads, check_spec, printable
from .spec import AttentionSpec, LayerSpec, ModelSpec, RecurrentSpec, TensorInfo

# ------------------------------------------------------------------------------------------------
# config access

# Defaults of transformers 5.23's config classes for the fields that shape tensors or the cache,
# used only when a config.json leaves the field out (an explicit null stays null).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False},
    "mistral": {"sliding_window": 4096},
    "mixtral": {"sliding_window": None, "num_local_experts": 8, "num_experts_per_tok": 2},
    "qwen2": {"use_sliding_window": False, "max_window_layers": 28},
    "qwen2_5_vl_text": {"use_sliding_window": False, "max_window_layers": 80},
    "qwen3": {"head_dim": 128, "use_sliding_window": False, "max_window_layers": 28},
    "qwen2_moe": {"qkv_bias": True, "decoder_sparse_step": 1, "num_experts": 60, "num_experts_per_tok": 4,
                  "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632},
    "qwen3_moe": {"decoder_sparse_step": 1, "num_experts": 128, "num_experts_per_tok": 8,
                  "moe_intermediate_size": 768, "use_sliding_window": False},
    "qwen3_next": {"head_dim": 256, "decoder_sparse_step": 1, "num_experts": 512, "num_experts_per_tok": 10,
                   "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
                   "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                   "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4},
    # Qwen3.5 / 3.6 text models (Qwen3_5TextConfig, Qwen3_5MoeTextConfig): Qwen3-Next's linear attention
    "qwen3_5_text": {"tie_word_embeddings": False, "head_dim": 256, "linear_conv_kernel_dim": 4,
                     "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
                     "linear_num_value_heads": 32, "full_attention_interval": 4},
    "qwen3_5_moe_text": {"tie_word_embeddings": False, "head_dim": 256, "num_experts": 256, "num_experts_per_tok": 8,
                         "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
                         "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                         "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4},
    "gemma": {"tie_word_embeddings": True, "head_dim": 256},
    "gemma2": {"tie_word_embeddings": True, "head_dim": 256, "sliding_window": 4096},
    "gemma3_text": {"tie_word_embeddings": True, "vocab_size": 262_208, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096,
                    "max_position_embeddings": 131_072, "sliding_window_pattern": 6},
    "cohere": {"tie_word_embeddings": True, "use_qk_norm": False},
    "cohere2": {"tie_word_embeddings": True, "sliding_window": 4096, "sliding_window_pattern": 4},
    "smollm3": {"tie_word_embeddings": True, "use_sliding_window": False, "no_rope_layer_interval": 4},
    "glm4": {"head_dim": 128, "attention_bias": True},
    "phi": {"qk_layernorm": False},
    "gpt_oss": {"head_dim": 64, "sliding_window": 128, "attention_bias": True, "num_local_experts": 128,
                "num_experts_per_tok": 4},
    "deepseek_v2": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                    "v_head_dim": 128, "first_k_dense_replace": 0, "n_routed_experts": 64, "n_shared_experts": 2,
                    "moe_intermediate_size": 1407},
    "deepseek_v3": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                    "v_head_dim": 128, "first_k_dense_replace": 3, "n_routed_experts": 256, "n_shared_experts": 1,
                    "moe_intermediate_size": 2048, "num_experts_per_tok": 8, "num_nextn_predict_layers": 1},
    "jamba": {"num_experts": 16, "num_experts_per_tok": 2, "expert_layer_period": 2, "expert_layer_offset": 1,
              "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4,
              "mamba_expand": 2, "mamba_dt_rank": "auto", "mamba_conv_bias": True, "mamba_proj_bias": False},
    "falcon_h1": {"mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1,
                  "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True,
                  "mamba_proj_bias": False, "mamba_rms_norm": False, "projectors_bias": False},
    "granitemoe": {"num_local_experts": 8, "num_experts_per_tok": 2},
    "granitemoehybrid": {"num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 1024,
                         "mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_head": "auto",
                         "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True, "mamba_proj_bias": False},
    "mamba": {"tie_word_embeddings": True, "state_size": 16, "expand": 2, "conv_kernel": 4, "use_bias": False,
              "use_conv_bias": True, "time_step_rank": "auto"},
    "mamba2": {"tie_word_embeddings": False, "num_heads": 128, "head_dim": 64, "state_size": 128, "expand": 2,
               "conv_kernel": 4, "n_groups": 8, "use_bias": False, "use_conv_bias": True},
    "llama4_text": {"head_dim": 128, "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
                    "intermediate_size_mlp": 16384, "no_rope_layer_interval": 4, "attention_chunk_size": 8192},
    "mllama_text_model": {"cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38]},
    # multimodal wrappers (top level) and their vision towers
    "gemma3": {"tie_word_embeddings": True},
    "mistral3": {"tie_word_embeddings": True, "spatial_merge_size": 2, "vision_feature_layer": -1,
                 "multimodal_projector_bias": False},
    "qwen2_5_vl": {"tie_word_embeddings": False},
    "qwen3_5": {"tie_word_embeddings": False},
    "qwen3_5_moe": {"tie_word_embeddings": False},
    "siglip_vision_model": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                            "num_attention_heads": 12, "num_channels": 3, "image_size": 224, "patch_size": 16,
                            "vision_use_head": True},
    "pixtral": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_channels": 3,
                "patch_size": 16},
    "qwen2_5_vl_vision": {"depth": 32, "hidden_size": 3584, "intermediate_size": 3420, "in_channels": 3,
                          "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584},
    "qwen3_5_vision": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "in_channels": 3, "patch_size": 16,
                       "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584,
                       "num_position_embeddings": 2304},
    "llama4_vision_model": {"hidden_size": 768, "num_hidden_layers": 34, "num_attention_heads": 16,
                            "num_channels": 3, "intermediate_size": 5632, "vision_output_dim": 7680,
                            "image_size": 448, "patch_size": 14, "projector_input_dim": 4096,
                            "projector_output_dim": 4096},
    "mllama_vision_model": {"hidden_size": 1280, "num_hidden_layers": 32, "num_global_layers": 8,
                            "attention_heads": 16, "num_channels": 3, "intermediate_size": 5120,
                            "vision_output_dim": 7680, "image_size": 448, "patch_size": 14, "max_num_tiles": 4,
                            "supported_aspect_ratios": [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]]},
}

_WHAT = {"hidden_size": "the model width", "num_hidden_layers": "the number of decoder layers",
         "num_attention_heads": "the number of attention heads", "vocab_size": "the vocabulary size",
         "intermediate_size": "the MLP width"}


class _Cfg:
    """One config level (top, text_config or vision_config) with its class defaults behind it."""

    def __init__(self, d: dict[str, Any], model_type: str, where: str):
        self.d, self.model_type, self.where = d, model_type, where
        self.defaults = _DEFAULTS.get(model_type, {})

    def get(self, key: str, default: Any = None) -> Any:
        """A field as the config class would hold it; known keys are checked (type and bounds, limits.py)."""
        value = self.d[key] if key in self.d else self.defaults.get(key, default)
        return check_config_value(key, value, self.where)

    def flag(self, key: str, default: bool = False) -> bool:
        return bool(self.get(key, default))

    def int(self, key: str, default: int | None = None) -> int:
        """A positive integer field; a missing or malformed one is a ModelFormatError naming it."""
        v = self.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            what = f", {_WHAT[key]}" if key in _WHAT else ""
            got = "missing" if v is None else shown(v)
            raise ModelFormatError(f"{self.where}: {key} is {got} (expected a positive integer{what}, "
                                   f"for model_type '{self.model_type}')")
        return v

    # the usual attention shape
    @property
    def h(self) -> int:
        return self.int("hidden_size")

    @property
    def n_layers(self) -> int:
        return self.int("num_hidden_layers")

    @property
    def heads(self) -> int:
        return self.int("num_attention_heads")

    @property
    def kv_heads(self) -> int:
        kv = self.get("num_key_value_heads") or self.heads
        check_heads(self.heads, kv, self.where, ("num_attention_heads", "num_key_value_heads"))
        return kv

    @property
    def head_dim(self) -> int:
        hd = self.get("head_dim") or self.h // self.heads
        if not hd:
            raise ModelFormatError(f"{self.where}: no head_dim and hidden_size {self.h} < "
                                   f"num_attention_heads {self.heads} (expected head_dim, or hidden_size ≥ heads)")
        return hd

    @property
    def vocab(self) -> int:
        return self.int("vocab_size")

    def per_layer(self, key: str, n: int) -> list[Any] | None:
        """A list with one entry per layer (no_rope_layers), or None when absent; another length is an error."""
        v = self.get(key)
        if v and len(v) != n:
            raise ModelFormatError(f"{self.where}: {key} has {len(v)} entries "
                                   f"(expected one per layer: {n})")
        return v or None

    def sub(self, key: str, model_type: str) -> _Cfg:
        d = self.d.get(key)
        d = d if isinstance(d, dict) else {}
        return _Cfg(d, printable(d.get("model_type") or model_type, 100), f"{self.where} {key}")


# ------------------------------------------------------------------------------------------------
# tensor collection and shared blocks

class _Tensors:
    def __init__(self) -> None:
        self.items: list[TensorInfo] = []
        self.notes: list[str] = []

    def add(self, name: str, shape: tuple[int, ...] | list[int], role: str, layer: int | None = None) -> None:
        self.items.append(TensorInfo(name, tuple(int(d) for d in shape), role, layer))

    def linear(self, name: str, out: int, inp: int, role: str, layer: int | None = None, bias: bool = False) -> None:
        self.add(f"{name}.weight", (out, inp), role, layer)
        if bias:
            self.add(f"{name}.bias", (out,), role if role in ("vision", "projector") else "bias", layer)

    def norm(self, name: str, dim: int | tuple[int, ...], layer: int | None = None, bias: bool = False,
             role: str = "norm") -> None:
        shape = dim if isinstance(dim, tuple) else (dim,)
        self.add(f"{name}.weight", shape, role, layer)
        if bias:
            self.add(f"{name}.bias", shape, role, layer)


def _attention(t: _Tensors, c: _Cfg, p: str, i: int, *, qkv_bias: bool = False, o_bias: bool = False,
               qk_norm: str | None = None, fused_qkv: bool = False, q_mult: int = 1, o_name: str = "o_proj") -> None:
    """q/k/v/o projections (+ biases, q/k norms). qk_norm: 'head' (head_dim), 'all' (heads·head_dim, OLMo 2),
    'per_head' ((heads, head_dim), Cohere)."""
    h, nh, nkv, hd = c.h, c.heads, c.kv_heads, c.head_dim
    if fused_qkv:
        t.linear(p + "qkv_proj", (nh + 2 * nkv) * hd, h, "attn_qkv", i, qkv_bias)
    else:
        t.linear(p + "q_proj", nh * hd * q_mult, h, "attn_q", i, qkv_bias)
        t.linear(p + "k_proj", nkv * hd, h, "attn_k", i, qkv_bias)
        t.linear(p + "v_proj", nkv * hd, h, "attn_v", i, qkv_bias)
    t.linear(p + o_name, h, nh * hd, "attn_o", i, o_bias)
    if qk_norm == "head":
        t.norm(p + "q_norm", hd, i)
        t.norm(p + "k_norm", hd, i)
    elif qk_norm == "all":
        t.norm(p + "q_norm", nh * hd, i)
        t.norm(p + "k_norm", nkv * hd, i)
    elif qk_norm == "per_head":
        t.norm(p + "q_norm", (nh, hd), i)
        t.norm(p + "k_norm", (nkv, hd), i)


def _mlp(t: _Tensors, p: str, h: int, ff: int, i: int | None, *, bias: bool = False, fused: bool = False,
         kind: str = "ffn", names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")) -> None:
    """Gated MLP: gate/up/down (or fused gate_up). kind 'ffn' (dense) or 'shared' (shared expert)."""
    if fused:
        t.linear(p + "gate_up_proj", 2 * ff, h, "ffn_gate_up", i, bias)
    else:
        t.linear(p + names[0], ff, h, f"{kind}_gate", i, bias)
        t.linear(p + names[1], ff, h, f"{kind}_up", i, bias)
    t.linear(p + names[2], h, ff, f"{kind}_down", i, bias)


def _experts(t: _Tensors, p: str, n: int, h: int, ff: int, i: int, *, hidden_first: bool = False,
             bias: bool = False) -> None:
    """transformers 5's fused expert tensors: gate_up (E, 2I, H) and down (E, H, I); Llama 4 and gpt-oss
    store them input-first: (E, H, 2I) and (E, I, H)."""
    if hidden_first:
        t.add(p + "gate_up_proj", (n, h, 2 * ff), "expert_gate_up", i)
    else:
        t.add(p + "gate_up_proj", (n, 2 * ff, h), "expert_gate_up", i)
    if bias:
        t.add(p + "gate_up_proj_bias", (n, 2 * ff), "bias", i)
    t.add(p + "down_proj", (n, ff, h) if hidden_first else (n, h, ff), "expert_down", i)
    if bias:
        t.add(p + "down_proj_bias", (n, h), "bias", i)


def _mla(t: _Tensors, c: _Cfg, p: str, i: int) -> AttentionSpec:
    """DeepSeek V2/V3 multi-head latent attention; V2-Lite (q_lora_rank null) projects q directly."""
    h, nh = c.h, c.heads
    q_lora, kv_lora = c.get("q_lora_rank"), c.int("kv_lora_rank")
    rope, nope, vd = c.int("qk_rope_head_dim"), c.int("qk_nope_head_dim"), c.int("v_head_dim")
    bias = c.flag("attention_bias")
    if q_lora:
        t.linear(p + "q_a_proj", q_lora, h, "attn_q_a", i, bias)
        t.norm(p + "q_a_layernorm", q_lora, i)
        t.linear(p + "q_b_proj", nh * (nope + rope), q_lora, "attn_q_b", i)
    else:
        t.linear(p + "q_proj", nh * (nope + rope), h, "attn_q", i)
    t.linear(p + "kv_a_proj_with_mqa", kv_lora + rope, h, "attn_kv_a", i, bias)
    t.norm(p + "kv_a_layernorm", kv_lora, i)
    t.linear(p + "kv_b_proj", nh * (nope + vd), kv_lora, "attn_kv_b", i)
    t.linear(p + "o_proj", h, nh * vd, "attn_o", i, bias)
    return AttentionSpec("mla", 1, kv_lora + rope, kv_lora)


def _mamba2(t: _Tensors, p: str, i: int, *, h: int, d_inner: int, heads: int, head_dim: int, groups: int,
            d_state: int, d_conv: int, conv_bias: bool, proj_bias: bool, out_bias: bool, gated_norm: bool,
            chunk_size: int = 0) -> RecurrentSpec:
    """Mamba-2 mixer (Mamba2, Falcon-H1, Granite 4 hybrid): state per sequence = conv window
    (d_conv − 1 columns, as llama.cpp and vLLM keep it) + heads × head_dim × d_state."""
    conv_dim = d_inner + 2 * groups * d_state
    t.add(p + "dt_bias", (heads,), "ssm_param", i)
    t.add(p + "A_log", (heads,), "ssm_param", i)
    t.add(p + "D", (heads,), "ssm_param", i)
    t.add(p + "conv1d.weight", (conv_dim, 1, d_conv), "ssm_conv", i)
    if conv_bias:
        t.add(p + "conv1d.bias", (conv_dim,), "bias", i)
    t.linear(p + "in_proj", d_inner + conv_dim + heads, h, "ssm_in", i, proj_bias)
    if gated_norm:
        t.norm(p + "norm", d_inner, i)
    t.linear(p + "out_proj", h, d_inner, "ssm_out", i, out_bias)
    return RecurrentSpec((d_conv - 1) * conv_dim, heads * head_dim * d_state, "mamba2", conv_dim, groups, d_state,
                         int(chunk_size or 0))


def _mamba1(t: _Tensors, p: str, i: int, *, h: int, d_inner: int, d_state: int, d_conv: int, dt_rank: int,
            conv_bias: bool, proj_bias: bool, bcdt_norms: bool = False) -> RecurrentSpec:
    """Mamba-1 mixer (Mamba, Jamba): conv (d_conv − 1) × d_inner, SSM state d_inner × d_state."""
    t.add(p + "A_log", (d_inner, d_state), "ssm_param", i)
    t.add(p + "D", (d_inner,), "ssm_param", i)
    t.add(p + "conv1d.weight", (d_inner, 1, d_conv), "ssm_conv", i)
    if conv_bias:
        t.add(p + "conv1d.bias", (d_inner,), "bias", i)
    t.linear(p + "in_proj", 2 * d_inner, h, "ssm_in", i, proj_bias)
    t.linear(p + "x_proj", dt_rank + 2 * d_state, d_inner, "ssm_in", i)
    t.add(p + "dt_proj.weight", (d_inner, dt_rank), "ssm_param", i)
    t.add(p + "dt_proj.bias", (d_inner,), "bias", i)
    t.linear(p + "out_proj", h, d_inner, "ssm_out", i, proj_bias)
    if bcdt_norms:          # Jamba normalises dt, B and C
        t.norm(p + "dt_layernorm", dt_rank, i)
        t.norm(p + "b_layernorm", d_state, i)
        t.norm(p + "c_layernorm", d_state, i)
    return RecurrentSpec((d_conv - 1) * d_inner, d_inner * d_state, "mamba", d_inner)


def _gated_deltanet(t: _Tensors, c: _Cfg, p: str, i: int, *, split_proj: bool = False) -> RecurrentSpec:
    """Qwen3-Next linear attention: conv over q, k, v ((kernel − 1) × (2·key_dim + value_dim)) and a
    head_k_dim × head_v_dim delta-rule state per value head. Qwen3.5 (split_proj) stores the same input
    projections as four tensors: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a."""
    h = c.h
    nk, nv = c.int("linear_num_key_heads"), c.int("linear_num_value_heads")
    dk, dv, kernel = c.int("linear_key_head_dim"), c.int("linear_value_head_dim"), c.int("linear_conv_kernel_dim")
    key_dim, value_dim = nk * dk, nv * dv
    conv_dim = 2 * key_dim + value_dim
    t.add(p + "dt_bias", (nv,), "ssm_param", i)
    t.add(p + "A_log", (nv,), "ssm_param", i)
    t.add(p + "conv1d.weight", (conv_dim, 1, kernel), "ssm_conv", i)
    if split_proj:
        t.linear(p + "in_proj_qkv", 2 * key_dim + value_dim, h, "ssm_in", i)
        t.linear(p + "in_proj_z", value_dim, h, "ssm_in", i)
        t.linear(p + "in_proj_b", nv, h, "ssm_in", i)
        t.linear(p + "in_proj_a", nv, h, "ssm_in", i)
    else:
        t.linear(p + "in_proj_qkvz", 2 * key_dim + 2 * value_dim, h, "ssm_in", i)
        t.linear(p + "in_proj_ba", 2 * nv, h, "ssm_in", i)
    t.norm(p + "norm", dv, i)
    t.linear(p + "out_proj", h, value_dim, "ssm_out", i)
    ssm = c.get("mamba_ssm_dtype")
    return RecurrentSpec((kernel - 1) * conv_dim, nv * dk * dv, "gated_deltanet", conv_dim,
                         ssm_dtype=str(ssm) if ssm else None)


# ------------------------------------------------------------------------------------------------
# which layers slide

def _layer_types(c: _Cfg, n: int) -> list[str] | None:
    lt = c.get("layer_types")
    if isinstance(lt, list) and len(lt) == n:
        return [str(x) for x in lt]
    return None


def _kind(layer_type: str) -> str:
    return {"sliding_attention": "sliding", "chunked_attention": "chunked", "linear_attention": "linear",
            "mamba": "linear", "attention": "full", "full_attention": "full"}.get(layer_type, layer_type)


def _kinds(c: _Cfg, rule: Callable[[_Cfg, int], list[str]]) -> list[str]:
    n = c.n_layers
    lt = _layer_types(c, n)
    return [_kind(x) for x in lt] if lt is not None else rule(c, n)


def _all_full(c: _Cfg, n: int) -> list[str]:
    return ["full"] * n


def _all_sliding_if_window(c: _Cfg, n: int) -> list[str]:   # Mistral, Mixtral, Phi-3: one window for every layer
    return ["sliding" if c.get("sliding_window") else "full"] * n


def _qwen_rule(c: _Cfg, n: int) -> list[str]:                # Qwen2/Qwen3: sliding from max_window_layers on
    if not (c.flag("use_sliding_window") and c.get("sliding_window")):
        return ["full"] * n
    start = c.get("max_window_layers", 28)
    return ["sliding" if i >= start else "full" for i in range(n)]


def _every(pattern_key: str, default: int) -> Callable[[_Cfg, int], list[str]]:
    """(pattern − 1) sliding layers then one full: Gemma 2 (2), Cohere 2 (4), Gemma 3 (6), gpt-oss (2)."""
    def rule(c: _Cfg, n: int) -> list[str]:
        k = int(c.get(pattern_key) or default) if pattern_key else default
        return ["sliding" if (i + 1) % k else "full" for i in range(n)]
    return rule


def _attn_spec(c: _Cfg, kind: str, *, window_key: str = "sliding_window") -> AttentionSpec:
    if kind == "chunked":     # Llama 4 chunked local attention: the cache never needs more than one chunk
        return AttentionSpec("sliding", c.kv_heads, c.head_dim, c.head_dim, c.int("attention_chunk_size"))
    window = c.get(window_key) if kind == "sliding" else None
    return AttentionSpec("sliding" if window else "full", c.kv_heads, c.head_dim, c.head_dim, window or None)


# ------------------------------------------------------------------------------------------------
# decoder stacks

_PRE_POST = ("input_layernorm", "post_attention_layernorm")
_SANDWICH = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")


def _stack(c: _Cfg, t: _Tensors, p: str, layer: Callable[[int, str], LayerSpec], *, embed: str = "embed_tokens",
           final: str = "norm", vocab: int | None = None, final_bias: bool = False) -> list[LayerSpec]:
    t.add(f"{p}{embed}.weight", (vocab or c.vocab, c.h), "embed")
    layers = [layer(i, f"{p}layers.{i}.") for i in range(c.n_layers)]
    t.norm(p + final, c.h, bias=final_bias)
    return layers


def _decoder(c: _Cfg, t: _Tensors, p: str, *, kinds: list[str] | None = None, attn: dict[str, Any] | None = None,
             mlp_bias: bool = False, fused_mlp: bool = False, norms: tuple[str, ...] = _PRE_POST,
             ffn: Callable[[int, str], bool] | None = None) -> list[LayerSpec]:
    """The common pre-norm decoder: attention, then a dense MLP or whatever ``ffn`` builds (returns moe?)."""
    kinds = kinds or ["full"] * c.n_layers
    ff = c.get("intermediate_size")

    def layer(i: int, q: str) -> LayerSpec:
        _attention(t, c, q + "self_attn.", i, **(attn or {}))
        if ffn is not None:
            moe = ffn(i, q)
        else:
            _mlp(t, q + "mlp.", c.h, c.int("intermediate_size") if ff is None else ff, i, bias=mlp_bias,
                 fused=fused_mlp)
            moe = False
        for n in norms:
            t.norm(q + n, c.h, i)
        return LayerSpec(_attn_spec(c, kinds[i]), None, moe)

    return _stack(c, t, p, layer)


def _sparse_moe_ffn(c: _Cfg, t: _Tensors, *, shared: bool) -> Callable[[int, str], bool]:
    """Qwen2-MoE / Qwen3-MoE / Qwen3-Next feed-forward: MoE every decoder_sparse_step layers unless in
    mlp_only_layers; Qwen2-MoE and Qwen3-Next add a gated shared expert."""
    n_exp = c.get("num_experts") or c.get("num_local_experts") or 0
    step = c.get("decoder_sparse_step") or 1
    only = set(c.get("mlp_only_layers") or [])

    def ffn(i: int, q: str) -> bool:
        if i in only or not n_exp or (i + 1) % step:
            _mlp(t, q + "mlp.", c.h, c.int("intermediate_size"), i)
            return False
        t.add(q + "mlp.gate.weight", (n_exp, c.h), "router", i)
        _experts(t, q + "mlp.experts.", n_exp, c.h, c.int("moe_intermediate_size"), i)
        if shared:
            _mlp(t, q + "mlp.shared_expert.", c.h, c.int("shared_expert_intermediate_size"), i, kind="shared")
            t.add(q + "mlp.shared_expert_gate.weight", (1, c.h), "router", i)
        return True

    return ffn


# ------------------------------------------------------------------------------------------------
# families: each builds the text model under prefix p ("model." or "model.language_model.") and
# returns its layers; the LM head is added by spec_from_config.

def _llama(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Llama, Granite, SmolLM3, Yi, Falcon3 …: attention_bias on all four projections, mlp_bias on the MLP
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, attn={"qkv_bias": bias, "o_bias": bias}, mlp_bias=c.flag("mlp_bias"))


def _smollm3(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    def rule(c: _Cfg, n: int) -> list[str]:
        k = c.get("no_rope_layer_interval") or 4
        ropes = c.per_layer("no_rope_layers", n) or [int((i + 1) % k != 0) for i in range(n)]
        slide = c.flag("use_sliding_window") and c.get("sliding_window")
        return ["sliding" if slide and not ropes[i] else "full" for i in range(n)]
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, kinds=_kinds(c, rule), attn={"qkv_bias": bias, "o_bias": bias},
                    mlp_bias=c.flag("mlp_bias"))


def _mistral(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    return _decoder(c, t, p, kinds=_all_sliding_if_window(c, c.n_layers))


def _qwen2(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    return _decoder(c, t, p, kinds=_kinds(c, _qwen_rule), attn={"qkv_bias": True})


def _qwen3(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, kinds=_kinds(c, _qwen_rule), attn={"qkv_bias": bias, "o_bias": bias, "qk_norm": "head"})


def _qwen2_moe(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    return _decoder(c, t, p, kinds=_kinds(c, _qwen_rule), attn={"qkv_bias": c.flag("qkv_bias", True)},
                    ffn=_sparse_moe_ffn(c, t, shared=True))


def _qwen3_moe(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    slide = c.flag("use_sliding_window") and c.get("sliding_window")
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, kinds=["sliding" if slide else "full"] * c.n_layers,
                    attn={"qkv_bias": bias, "o_bias": bias, "qk_norm": "head"}, ffn=_sparse_moe_ffn(c, t, shared=False))


def _qwen3_next(c: _Cfg, t: _Tensors, p: str, *, split_proj: bool = False,
                ffn: Callable[[int, str], bool] | None = None) -> list[LayerSpec]:
    # 3 gated delta-net layers then 1 gated full-attention layer (q_proj doubled for the output gate)
    kinds = _kinds(c, lambda c, n: ["linear" if (i + 1) % (c.get("full_attention_interval") or 4) else "full"
                                    for i in range(n)])
    ffn = ffn or _sparse_moe_ffn(c, t, shared=True)
    bias = c.flag("attention_bias")

    def layer(i: int, q: str) -> LayerSpec:
        if kinds[i] == "linear":
            att, rec = None, _gated_deltanet(t, c, q + "linear_attn.", i, split_proj=split_proj)
        else:
            _attention(t, c, q + "self_attn.", i, qkv_bias=bias, o_bias=bias, qk_norm="head", q_mult=2)
            att, rec = _attn_spec(c, "full"), None
        moe = ffn(i, q)
        for n in _PRE_POST:
            t.norm(q + n, c.h, i)
        return LayerSpec(att, rec, moe)

    return _stack(c, t, p, layer)


def _qwen3_5(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Qwen3.5 / 3.6 dense: Qwen3-Next's hybrid stack (split delta-net projections) with a dense MLP in every layer
    def ffn(i: int, q: str) -> bool:
        _mlp(t, q + "mlp.", c.h, c.int("intermediate_size"), i)
        return False

    return _qwen3_next(c, t, p, split_proj=True, ffn=ffn)


def _qwen3_5_moe(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Qwen3.5 MoE: Qwen3-Next's sparse MoE block (routed + gated shared expert) in every layer; the config
    # class drops decoder_sparse_step and mlp_only_layers, so a stray value in a config.json changes nothing
    n_exp, h = c.int("num_experts"), c.h

    def ffn(i: int, q: str) -> bool:
        t.add(q + "mlp.gate.weight", (n_exp, h), "router", i)
        _experts(t, q + "mlp.experts.", n_exp, h, c.int("moe_intermediate_size"), i)
        _mlp(t, q + "mlp.shared_expert.", h, c.int("shared_expert_intermediate_size"), i, kind="shared")
        t.add(q + "mlp.shared_expert_gate.weight", (1, h), "router", i)
        return True

    return _qwen3_next(c, t, p, split_proj=True, ffn=ffn)


def _mixtral(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    n_exp = c.int("num_local_experts")

    def ffn(i: int, q: str) -> bool:
        t.add(q + "mlp.gate.weight", (n_exp, c.h), "router", i)
        _experts(t, q + "mlp.experts.", n_exp, c.h, c.int("intermediate_size"), i)
        return True

    return _decoder(c, t, p, kinds=_all_sliding_if_window(c, c.n_layers), ffn=ffn)


def _gemma(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, attn={"qkv_bias": bias, "o_bias": bias})


def _gemma2(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, kinds=_kinds(c, _every("", 2)), attn={"qkv_bias": bias, "o_bias": bias}, norms=_SANDWICH)


def _gemma3(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, kinds=_kinds(c, _every("sliding_window_pattern", 6)),
                    attn={"qkv_bias": bias, "o_bias": bias, "qk_norm": "head"}, norms=_SANDWICH)


def _phi3(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    if c.get("sliding_window"):
        t.notes.append(f"Phi-3 attends within a {c.get('sliding_window')}-token window in transformers; "
                       "llama.cpp disables Phi-3's sliding window and caches every token")
    return _decoder(c, t, p, kinds=_all_sliding_if_window(c, c.n_layers), attn={"fused_qkv": True}, fused_mlp=True)


def _phi(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Phi-1/1.5/2: parallel block, one LayerNorm (with bias), biased q/k/v/dense and fc1/fc2, biased LM head
    h, ff = c.h, c.int("intermediate_size")

    def layer(i: int, q: str) -> LayerSpec:
        _attention(t, c, q + "self_attn.", i, qkv_bias=True, o_bias=True, o_name="dense")
        if c.flag("qk_layernorm"):
            t.norm(q + "self_attn.q_layernorm", h // c.heads, i, bias=True)
            t.norm(q + "self_attn.k_layernorm", h // c.heads, i, bias=True)
        t.linear(q + "mlp.fc1", ff, h, "ffn_up", i, True)
        t.linear(q + "mlp.fc2", h, ff, "ffn_down", i, True)
        t.norm(q + "input_layernorm", h, i, bias=True)
        return LayerSpec(_attn_spec(c, "full"))

    return _stack(c, t, p, layer, final="final_layernorm", final_bias=True)


def _cohere(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Command-R: parallel attention + MLP after one LayerNorm (weight only); optional per-head q/k norms
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, attn={"qkv_bias": bias, "o_bias": bias,
                                   "qk_norm": "per_head" if c.flag("use_qk_norm") else None},
                    norms=("input_layernorm",))


def _cohere2(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    c = _Cfg({**c.d, "head_dim": None}, c.model_type, c.where)   # Cohere2Config derives head_dim = hidden / heads
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, kinds=_kinds(c, _every("sliding_window_pattern", 4)),
                    attn={"qkv_bias": bias, "o_bias": bias}, norms=("input_layernorm",))


def _olmo2(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, attn={"qkv_bias": bias, "o_bias": bias, "qk_norm": "all"},
                    norms=("post_attention_layernorm", "post_feedforward_layernorm"))


def _glm4(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    return _decoder(c, t, p, attn={"qkv_bias": c.flag("attention_bias", True)}, fused_mlp=True,
                    norms=_PRE_POST + ("post_self_attn_layernorm", "post_mlp_layernorm"))


def _gpt_oss(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    kinds = _kinds(c, _every("", 2))
    n_exp, ff = c.int("num_local_experts"), c.int("intermediate_size")
    bias = c.flag("attention_bias", True)

    def layer(i: int, q: str) -> LayerSpec:
        t.add(q + "self_attn.sinks", (c.heads,), "attn_sinks", i)
        _attention(t, c, q + "self_attn.", i, qkv_bias=bias, o_bias=bias)
        t.linear(q + "mlp.router", n_exp, c.h, "router", i, True)
        _experts(t, q + "mlp.experts.", n_exp, c.h, ff, i, hidden_first=True, bias=True)
        for n in _PRE_POST:
            t.norm(q + n, c.h, i)
        return LayerSpec(_attn_spec(c, kinds[i]), None, True)

    return _stack(c, t, p, layer)


def _deepseek(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # DeepSeek V2/V3, Kimi K2: MLA everywhere; dense MLP for the first first_k_dense_replace layers, then
    # routed experts + shared experts (n_shared_experts × moe_intermediate_size wide)
    n_exp, dense = c.int("n_routed_experts"), c.get("first_k_dense_replace") or 0
    moe_ff = c.int("moe_intermediate_size")
    shared_ff = moe_ff * (c.get("n_shared_experts") or 0)
    mlp_bias = c.flag("mlp_bias") if c.model_type == "deepseek_v2" else False
    mtp = c.get("num_nextn_predict_layers") or 0
    if mtp:
        t.notes.append(f"num_nextn_predict_layers={mtp}: the checkpoint's multi-token-prediction layer "
                       f"(model.layers.{c.n_layers}.*) is not built by transformers and is not counted")

    def layer(i: int, q: str) -> LayerSpec:
        att = _mla(t, c, q + "self_attn.", i)
        moe = i >= dense
        if moe:
            _experts(t, q + "mlp.experts.", n_exp, c.h, moe_ff, i)
            t.add(q + "mlp.gate.weight", (n_exp, c.h), "router", i)
            if shared_ff:
                _mlp(t, q + "mlp.shared_experts.", c.h, shared_ff, i, kind="shared", bias=mlp_bias)
        else:
            _mlp(t, q + "mlp.", c.h, c.int("intermediate_size"), i, bias=mlp_bias)
        for n in _PRE_POST:
            t.norm(q + n, c.h, i)
        return LayerSpec(att, None, moe)

    return _stack(c, t, p, layer)


def _llama4_text(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Llama 4: chunked local attention on RoPE layers, full attention on every 4th (NoPE) layer;
    # MoE layers (routed experts + one shared expert) every interleave_moe_layer_step, dense in between
    n = c.n_layers
    ropes = (c.per_layer("no_rope_layers", n)
             or [int((i + 1) % (c.get("no_rope_layer_interval") or 4) != 0) for i in range(n)])
    kinds = _kinds(c, lambda c, n: ["chunked" if ropes[i] else "full" for i in range(n)])
    step = c.get("interleave_moe_layer_step") or 1
    moe_layers = set(c.get("moe_layers") or range(step - 1, n, step))
    n_exp, ff = c.int("num_local_experts"), c.int("intermediate_size")
    bias = c.flag("attention_bias")
    if "chunked" in kinds:
        t.notes.append(f"Llama 4 chunked attention (attention_chunk_size {c.get('attention_chunk_size')}) "
                       "is described as a sliding window of one chunk")

    def layer(i: int, q: str) -> LayerSpec:
        _attention(t, c, q + "self_attn.", i, qkv_bias=bias, o_bias=bias)
        moe = i in moe_layers
        if moe:
            _experts(t, q + "feed_forward.experts.", n_exp, c.h, ff, i, hidden_first=True)
            t.add(q + "feed_forward.router.weight", (n_exp, c.h), "router", i)
            _mlp(t, q + "feed_forward.shared_expert.", c.h, ff, i, kind="shared")
        else:
            _mlp(t, q + "feed_forward.", c.h, c.int("intermediate_size_mlp"), i)
        for nm in _PRE_POST:
            t.norm(q + nm, c.h, i)
        return LayerSpec(_attn_spec(c, kinds[i]), None, moe)

    return _stack(c, t, p, layer)


def _mllama_text(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Llama 3.2 Vision text model: Llama layers plus gated cross-attention layers reading the image
    # (their K/V come from the image tokens, a constant per image, not a per-token cache)
    cross = set(c.get("cross_attention_layers") or [])
    ff = c.int("intermediate_size")
    if cross:
        t.notes.append(f"{len(cross)} cross-attention layers hold image-token K/V (constant per image), "
                       "not a per-token KV cache; they are left out of the KV layout")

    def layer(i: int, q: str) -> LayerSpec:
        if i in cross:
            _attention(t, c, q + "cross_attn.", i, qk_norm="head")
            t.add(q + "cross_attn_attn_gate", (1,), "other", i)
            t.add(q + "cross_attn_mlp_gate", (1,), "other", i)
        else:
            _attention(t, c, q + "self_attn.", i)
        _mlp(t, q + "mlp.", c.h, ff, i)
        for nm in _PRE_POST:
            t.norm(q + nm, c.h, i)
        return LayerSpec(None if i in cross else _attn_spec(c, "full"))

    return _stack(c, t, p, layer, vocab=c.vocab + 8)      # MllamaTextModel embeds vocab_size + 8 rows


def _jamba(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Jamba: one attention layer per attn_layer_period (at attn_layer_offset), Mamba-1 elsewhere;
    # MoE feed-forward every expert_layer_period layers (at expert_layer_offset)
    h = c.h
    d_inner = c.int("mamba_expand") * h
    rank = c.get("mamba_dt_rank")
    rank = math.ceil(h / 16) if rank == "auto" else int(rank)
    a_per, a_off = c.int("attn_layer_period"), c.get("attn_layer_offset") or 0
    e_per, e_off = c.int("expert_layer_period"), c.get("expert_layer_offset") or 0
    n_exp, ff = c.int("num_experts"), c.int("intermediate_size")

    def layer(i: int, q: str) -> LayerSpec:
        att = rec = None
        if i % a_per == a_off:
            _attention(t, c, q + "self_attn.", i)
            att = _attn_spec(c, "full")
        else:
            rec = _mamba1(t, q + "mamba.", i, h=h, d_inner=d_inner, d_state=c.int("mamba_d_state"),
                          d_conv=c.int("mamba_d_conv"), dt_rank=rank, conv_bias=c.flag("mamba_conv_bias"),
                          proj_bias=c.flag("mamba_proj_bias"), bcdt_norms=True)
        moe = n_exp > 1 and i % e_per == e_off
        if moe:
            t.add(q + "feed_forward.router.weight", (n_exp, h), "router", i)
            _experts(t, q + "feed_forward.experts.", n_exp, h, ff, i)
        else:
            _mlp(t, q + "feed_forward.", h, ff, i)
        for nm in ("input_layernorm", "pre_ff_layernorm"):
            t.norm(q + nm, h, i)
        return LayerSpec(att, rec, moe)

    return _stack(c, t, p, layer, final="final_layernorm")


def _falcon_h1(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Falcon-H1: every layer runs attention and a Mamba-2 mixer side by side, then the MLP
    h = c.h
    d_inner = c.get("mamba_d_ssm") or c.int("mamba_expand") * h
    heads = c.int("mamba_n_heads")
    hd = c.get("mamba_d_head")
    hd = d_inner // heads if hd in (None, "auto") else int(hd)
    bias = c.flag("attention_bias")

    def layer(i: int, q: str) -> LayerSpec:
        _mlp(t, q + "feed_forward.", h, c.int("intermediate_size"), i, bias=c.flag("mlp_bias"))
        rec = _mamba2(t, q + "mamba.", i, h=h, d_inner=d_inner, heads=heads, head_dim=hd,
                      groups=c.int("mamba_n_groups"), d_state=c.int("mamba_d_state"), d_conv=c.int("mamba_d_conv"),
                      conv_bias=c.flag("mamba_conv_bias"), proj_bias=c.flag("mamba_proj_bias"),
                      out_bias=c.flag("projectors_bias"), gated_norm=c.flag("mamba_rms_norm"),
                      chunk_size=c.get("mamba_chunk_size") or 0)
        _attention(t, c, q + "self_attn.", i, qkv_bias=bias, o_bias=bias)
        for nm in ("input_layernorm", "pre_ff_layernorm"):
            t.norm(q + nm, h, i)
        return LayerSpec(_attn_spec(c, "full"), rec)

    return _stack(c, t, p, layer, final="final_layernorm")


def _granitemoe(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    n_exp, ff = c.int("num_local_experts"), c.int("intermediate_size")
    bias = c.flag("attention_bias")

    def ffn(i: int, q: str) -> bool:
        t.add(q + "block_sparse_moe.router.weight", (n_exp, c.h), "router", i)
        _experts(t, q + "block_sparse_moe.experts.", n_exp, c.h, ff, i)
        return True

    return _decoder(c, t, p, attn={"qkv_bias": bias, "o_bias": bias}, ffn=ffn)


def _granitemoehybrid(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Granite 4.0-H: Mamba-2 layers with a few attention layers (layer_types), each followed by
    # routed experts (when num_local_experts > 0) and an always-on shared MLP (input_linear = gate+up)
    h = c.h
    kinds = _kinds(c, lambda c, n: ["linear"] * n)
    d_inner = c.int("mamba_expand") * h
    heads = c.int("mamba_n_heads")
    hd = c.get("mamba_d_head")
    hd = d_inner // heads if hd in (None, "auto") else int(hd)
    n_exp = c.get("num_local_experts") or 0
    shared = c.int("shared_intermediate_size")
    bias = c.flag("attention_bias")

    def layer(i: int, q: str) -> LayerSpec:
        t.norm(q + "input_layernorm", h, i)
        t.norm(q + "post_attention_layernorm", h, i)
        if n_exp:
            t.add(q + "block_sparse_moe.router.weight", (n_exp, h), "router", i)
            _experts(t, q + "block_sparse_moe.experts.", n_exp, h, c.int("intermediate_size"), i)
        t.linear(q + "shared_mlp.input_linear", 2 * shared, h, "ffn_gate_up", i)
        t.linear(q + "shared_mlp.output_linear", h, shared, "ffn_down", i)
        att = rec = None
        if kinds[i] == "linear":
            rec = _mamba2(t, q + "mamba.", i, h=h, d_inner=d_inner, heads=heads, head_dim=hd,
                          groups=c.int("mamba_n_groups"), d_state=c.int("mamba_d_state"),
                          d_conv=c.int("mamba_d_conv"), conv_bias=c.flag("mamba_conv_bias"),
                          proj_bias=c.flag("mamba_proj_bias"), out_bias=c.flag("mamba_proj_bias"), gated_norm=True,
                          chunk_size=c.get("mamba_chunk_size") or 0)
        else:
            _attention(t, c, q + "self_attn.", i, qkv_bias=bias, o_bias=bias)
            att = _attn_spec(c, "full")
        return LayerSpec(att, rec, bool(n_exp))

    return _stack(c, t, p, layer)


def _mamba(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    h = c.h
    d_inner = c.int("expand") * h       # MambaConfig recomputes intermediate_size = expand × hidden
    rank = c.get("time_step_rank")
    rank = math.ceil(h / 16) if rank == "auto" else int(rank)

    def layer(i: int, q: str) -> LayerSpec:
        t.norm(q + "norm", h, i)
        return LayerSpec(None, _mamba1(t, q + "mixer.", i, h=h, d_inner=d_inner, d_state=c.int("state_size"),
                                       d_conv=c.int("conv_kernel"), dt_rank=rank,
                                       conv_bias=c.flag("use_conv_bias"), proj_bias=c.flag("use_bias")))

    return _stack(c, t, p, layer, embed="embeddings", final="norm_f")


def _mamba2_family(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    h = c.h
    d_inner = c.int("expand") * h

    def layer(i: int, q: str) -> LayerSpec:
        t.norm(q + "norm", h, i)
        return LayerSpec(None, _mamba2(t, q + "mixer.", i, h=h, d_inner=d_inner, heads=c.int("num_heads"),
                                       head_dim=c.int("head_dim"), groups=c.int("n_groups"),
                                       d_state=c.int("state_size"), d_conv=c.int("conv_kernel"),
                                       conv_bias=c.flag("use_conv_bias"), proj_bias=c.flag("use_bias"),
                                       out_bias=c.flag("use_bias"), gated_norm=True,
                                       chunk_size=c.get("chunk_size") or 0))

    return _stack(c, t, p, layer, embed="embeddings", final="norm_f")


# ------------------------------------------------------------------------------------------------
# vision towers and projectors (role "vision" / "projector", counted apart by ModelSpec.vision_params)

def _vit_layer(t: _Tensors, q: str, h: int, ff: int, *, attn: str, out: str, fc: tuple[str, str],
               norms: tuple[str, str], qkv_bias: bool, norm_bias: bool = True) -> None:
    for x in ("q_proj", "k_proj", "v_proj"):
        t.linear(f"{q}{attn}.{x}", h, h, "vision", None, qkv_bias)
    t.linear(f"{q}{attn}.{out}", h, h, "vision", None, qkv_bias)
    t.linear(f"{q}mlp.{fc[0]}", ff, h, "vision", None, True)
    t.linear(f"{q}mlp.{fc[1]}", h, ff, "vision", None, True)
    for n in norms:
        t.norm(q + n, h, bias=norm_bias, role="vision")


def _siglip(v: _Cfg, t: _Tensors, p: str) -> int:
    h, ff, patch, ch = v.h, v.int("intermediate_size"), v.int("patch_size"), v.int("num_channels")
    t.add(p + "embeddings.patch_embedding.weight", (h, ch, patch, patch), "vision")
    t.add(p + "embeddings.patch_embedding.bias", (h,), "vision")
    t.add(p + "embeddings.position_embedding.weight", ((v.int("image_size") // patch) ** 2, h), "vision")
    for j in range(v.n_layers):
        _vit_layer(t, f"{p}encoder.layers.{j}.", h, ff, attn="self_attn", out="out_proj", fc=("fc1", "fc2"),
                   norms=("layer_norm1", "layer_norm2"), qkv_bias=True)
    t.norm(p + "post_layernorm", h, bias=True, role="vision")
    if v.flag("vision_use_head", True):
        t.add(p + "head.probe", (1, 1, h), "vision")
        t.add(p + "head.attention.in_proj_weight", (3 * h, h), "vision")
        t.add(p + "head.attention.in_proj_bias", (3 * h,), "vision")
        t.linear(p + "head.attention.out_proj", h, h, "vision", None, True)
        t.norm(p + "head.layernorm", h, bias=True, role="vision")
        t.linear(p + "head.mlp.fc1", ff, h, "vision", None, True)
        t.linear(p + "head.mlp.fc2", h, ff, "vision", None, True)
    return h


def _gemma3_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "siglip_vision_model")
    vh = _siglip(v, t, "model.vision_tower.")
    t.add("model.multi_modal_projector.mm_input_projection_weight", (vh, text.h), "projector")
    t.norm("model.multi_modal_projector.mm_soft_emb_norm", vh, role="projector")


def _pixtral_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "pixtral")
    p, h, ff, patch = "model.vision_tower.", v.h, v.int("intermediate_size"), v.int("patch_size")
    t.add(p + "patch_conv.weight", (h, v.int("num_channels"), patch, patch), "vision")
    t.norm(p + "ln_pre", h, role="vision")
    for j in range(v.n_layers):
        q = f"{p}transformer.layers.{j}."
        t.norm(q + "attention_norm", h, role="vision")
        for x in ("gate_proj", "up_proj"):
            t.linear(q + "feed_forward." + x, ff, h, "vision")
        t.linear(q + "feed_forward.down_proj", h, ff, "vision")
        for x in ("k_proj", "v_proj", "q_proj", "o_proj"):
            t.linear(q + "attention." + x, h, h, "vision")
        t.norm(q + "ffn_norm", h, role="vision")
    m, bias = top.int("spatial_merge_size"), top.flag("multimodal_projector_bias")
    feature_layers = top.get("vision_feature_layer", -1)
    n_feat = 1 if isinstance(feature_layers, int) else len(feature_layers)
    q = "model.multi_modal_projector."
    t.norm(q + "norm", h, role="projector")
    t.linear(q + "patch_merger.merging_layer", h, h * m * m, "projector")
    t.linear(q + "linear_1", text.h, h * n_feat, "projector", None, bias)
    t.linear(q + "linear_2", text.h, text.h, "projector", None, bias)


def _qwen25_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "qwen2_5_vl_vision")
    p, h, ff, patch = "model.visual.", v.h, v.int("intermediate_size"), v.int("patch_size")
    t.add(p + "patch_embed.proj.weight", (h, v.int("in_channels"), v.int("temporal_patch_size"), patch, patch),
          "vision")
    for j in range(v.int("depth")):
        q = f"{p}blocks.{j}."
        t.norm(q + "norm1", h, role="vision")
        t.norm(q + "norm2", h, role="vision")
        t.linear(q + "attn.qkv", 3 * h, h, "vision", None, True)
        t.linear(q + "attn.proj", h, h, "vision", None, True)
        for x in ("gate_proj", "up_proj"):
            t.linear(q + "mlp." + x, ff, h, "vision", None, True)
        t.linear(q + "mlp.down_proj", h, ff, "vision", None, True)
    merged = h * v.int("spatial_merge_size") ** 2
    t.norm(p + "merger.ln_q", h, role="projector")
    t.linear(p + "merger.mlp.0", merged, merged, "projector", None, True)
    t.linear(p + "merger.mlp.2", v.int("out_hidden_size"), merged, "projector", None, True)


def _qwen3_5_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    # Qwen3-VL's ViT without DeepStack mergers (Qwen3_5VisionModel): learned position table, LayerNorm blocks
    d = top.d.get("vision_config")
    v = _Cfg(d if isinstance(d, dict) else {}, "qwen3_5_vision", f"{top.where} vision_config")
    p, h, ff, patch = "model.visual.", v.h, v.int("intermediate_size"), v.int("patch_size")
    t.add(p + "patch_embed.proj.weight", (h, v.int("in_channels"), v.int("temporal_patch_size"), patch, patch),
          "vision")
    t.add(p + "patch_embed.proj.bias", (h,), "vision")
    t.add(p + "pos_embed.weight", (v.int("num_position_embeddings"), h), "vision")
    for j in range(v.int("depth")):
        q = f"{p}blocks.{j}."
        t.norm(q + "norm1", h, bias=True, role="vision")
        t.norm(q + "norm2", h, bias=True, role="vision")
        t.linear(q + "attn.qkv", 3 * h, h, "vision", None, True)
        t.linear(q + "attn.proj", h, h, "vision", None, True)
        t.linear(q + "mlp.linear_fc1", ff, h, "vision", None, True)
        t.linear(q + "mlp.linear_fc2", h, ff, "vision", None, True)
    merged = h * v.int("spatial_merge_size") ** 2
    t.norm(p + "merger.norm", h, bias=True, role="projector")
    t.linear(p + "merger.linear_fc1", merged, merged, "projector", None, True)
    t.linear(p + "merger.linear_fc2", v.int("out_hidden_size"), merged, "projector", None, True)


def _llama4_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "llama4_vision_model")
    p, h, ff, patch, ch = "vision_model.", v.h, v.int("intermediate_size"), v.int("patch_size"), v.int("num_channels")
    t.add(p + "class_embedding", (h,), "vision")
    t.add(p + "positional_embedding_vlm", ((v.int("image_size") // patch) ** 2 + 1, h), "vision")
    t.linear(p + "patch_embedding.linear", h, ch * patch * patch, "vision")
    t.norm(p + "layernorm_pre", h, bias=True, role="vision")
    t.norm(p + "layernorm_post", h, bias=True, role="vision")
    for j in range(v.n_layers):
        _vit_layer(t, f"{p}model.layers.{j}.", h, ff, attn="self_attn", out="o_proj", fc=("fc1", "fc2"),
                   norms=("input_layernorm", "post_attention_layernorm"), qkv_bias=True)
    t.linear(p + "vision_adapter.mlp.fc1", v.int("projector_input_dim"), ff, "vision")
    t.linear(p + "vision_adapter.mlp.fc2", v.int("projector_output_dim"), v.int("projector_output_dim"), "vision")
    t.linear("multi_modal_projector.linear_1", text.h, v.int("vision_output_dim"), "projector")


def _mllama_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "mllama_vision_model")
    p, h, ff, patch = "model.vision_model.", v.h, v.int("intermediate_size"), v.int("patch_size")
    tiles, ratios = v.int("max_num_tiles"), len(v.get("supported_aspect_ratios") or []) + 1
    n_patches = (v.int("image_size") // patch) ** 2 + 1
    t.add(p + "class_embedding", (h,), "vision")
    t.add(p + "patch_embedding.weight", (h, v.int("num_channels"), patch, patch), "vision")
    t.add(p + "gated_positional_embedding.gate", (1,), "vision")
    t.add(p + "gated_positional_embedding.embedding", (n_patches, h), "vision")
    t.add(p + "gated_positional_embedding.tile_embedding.weight", (ratios, tiles * n_patches * h), "vision")
    for x in ("pre_tile_positional_embedding", "post_tile_positional_embedding"):
        t.add(f"{p}{x}.gate", (1,), "vision")
        t.add(f"{p}{x}.embedding.weight", (ratios, tiles * h), "vision")
    t.norm(p + "layernorm_pre", h, bias=True, role="vision")
    t.norm(p + "layernorm_post", h, bias=True, role="vision")
    for stack, n, gated in (("transformer", v.n_layers, False), ("global_transformer", v.int("num_global_layers"), True)):
        for j in range(n):
            q = f"{p}{stack}.layers.{j}."
            if gated:
                t.add(q + "gate_attn", (1,), "vision")
                t.add(q + "gate_ffn", (1,), "vision")
            _vit_layer(t, q, h, ff, attn="self_attn", out="o_proj", fc=("fc1", "fc2"),
                       norms=("input_layernorm", "post_attention_layernorm"), qkv_bias=False)
    t.linear("model.multi_modal_projector", text.h, v.int("vision_output_dim"), "projector", None, True)


# ------------------------------------------------------------------------------------------------
# the family table

Builder = Callable[[_Cfg, _Tensors, str], list[LayerSpec]]

FAMILIES: dict[str, Builder] = {
    "llama": _llama, "granite": _llama, "smollm3": _smollm3, "mistral": _mistral, "mixtral": _mixtral,
    "qwen2": _qwen2, "qwen2_5_vl_text": _qwen2, "qwen3": _qwen3, "qwen2_moe": _qwen2_moe,
    "qwen3_moe": _qwen3_moe, "qwen3_next": _qwen3_next, "qwen3_5_text": _qwen3_5, "qwen3_5_moe_text": _qwen3_5_moe,
    "gemma": _gemma, "gemma2": _gemma2, "gemma3_text": _gemma3,
    "phi": _phi, "phi3": _phi3, "cohere": _cohere, "cohere2": _cohere2, "olmo2": _olmo2, "glm4": _glm4,
    "gpt_oss": _gpt_oss, "deepseek_v2": _deepseek, "deepseek_v3": _deepseek,
    "llama4_text": _llama4_text, "mllama_text_model": _mllama_text,
    "jamba": _jamba, "falcon_h1": _falcon_h1, "granitemoe": _granitemoe, "granitemoehybrid": _granitemoehybrid,
    "mamba": _mamba, "mamba2": _mamba2_family,
}

# Whole-model layout per family: (prefix of the text model, LM head name, where the tie flag lives).
_CAUSAL = ("model.", "lm_head", "text")
_LAYOUT: dict[str, tuple[str, str, str]] = {"mamba": ("backbone.", "lm_head", "text"),
                                             "mamba2": ("backbone.", "lm_head", "text")}

# Multimodal wrappers: text sub-config type, vision builder, (text prefix, LM head, tie flag owner).
_MULTIMODAL: dict[str, tuple[str, Callable[[_Cfg, _Cfg, _Tensors], None], tuple[str, str, str]]] = {
    "gemma3": ("gemma3_text", _gemma3_vision, ("model.language_model.", "lm_head", "top")),
    "mistral3": ("mistral", _pixtral_vision, ("model.language_model.", "lm_head", "top")),
    "qwen2_5_vl": ("qwen2_5_vl_text", _qwen25_vision, ("model.language_model.", "lm_head", "top|text")),
    "qwen3_5": ("qwen3_5_text", _qwen3_5_vision, ("model.language_model.", "lm_head", "top")),
    "qwen3_5_moe": ("qwen3_5_moe_text", _qwen3_5_vision, ("model.language_model.", "lm_head", "top")),
    "llama4": ("llama4_text", _llama4_vision, ("language_model.model.", "language_model.lm_head", "text")),
    "mllama": ("mllama_text_model", _mllama_vision, ("model.language_model.", "lm_head", "top")),
}

# Fields a config needs before it can be read as a plain Llama decoder.
_LLAMA_LIKE = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size")


def _file_quant(top: dict[str, Any], text: dict[str, Any]) -> str | None:
    qc = top.get("quantization_config") or text.get("quantization_config")
    if isinstance(qc, dict) and qc.get("quant_method"):
        method = str(qc["quant_method"]).lower()[:40]
        if method == "bitsandbytes":
            return "bnb-8bit" if qc.get("load_in_8bit") else "bnb-4bit"
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


def spec_from_config(config: dict[str, Any], *, id: str, source: str = "", repo_id: str | None = None) -> ModelSpec:
    """A config.json dict → ModelSpec with transformers 5's tensors and the per-layer cache layout.

    Raises ModelFormatError for a non-dict config, a missing or malformed required field (named in
    the message), or a model_type that is neither supported nor shaped like a Llama decoder.
    """
    where = source or id
    if not isinstance(config, dict):
        raise ModelFormatError(f"{where}: config.json must be a JSON object, got {type(config).__name__}")
    mt = config.get("model_type") or ""
    if not isinstance(mt, str) or len(mt) > 64:
        raise ModelFormatError(f"{where}: model_type is {shown(mt)} (expected a short name such as 'llama')")
    notes: list[str] = []
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
    if builder is _jamba or builder is _granitemoehybrid:
        n_exp = n_exp if any(ly.moe for ly in layers) else 0
    archs = config.get("architectures")
    archs = [printable(archs[0], 200)] if isinstance(archs, list) and archs and isinstance(archs[0], str) else []
    return check_spec(ModelSpec(
        id=id, architecture=archs[0] if archs else mt, family=mt or text.model_type,
        hidden_size=text.h, n_layers=text.n_layers, n_heads=0 if is_ssm else text.heads, vocab_size=text.vocab,
        layers=tuple(layers), tensors=tuple(t.items),
        intermediate_size=text.get("intermediate_size") if isinstance(text.get("intermediate_size"), int) else None,
        max_position_embeddings=text.get("max_position_embeddings"), tie_word_embeddings=tied,
        n_experts=n_exp, n_experts_active=int(text.get("num_experts_per_tok") or 0) if n_exp else 0,
        source=source, repo_id=repo_id, file_quant=_file_quant(config, text.d), notes=tuple(notes)))
