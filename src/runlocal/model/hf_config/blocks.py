"""The tensor collector and the blocks families share (attention, MLP, experts, MLA, Mamba 1/2 mixers,
gated delta-net), which layers slide, and the common decoder stack — each as transformers 5.23 builds it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..spec import AttentionSpec, LayerSpec, RecurrentSpec, TensorInfo
from .access import _Cfg

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


