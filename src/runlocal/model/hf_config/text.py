"""One builder per text-model family, each mirroring transformers 5.23's models/<family>/modeling_*.py:
it adds the family's tensors under prefix p and returns the decoder layers' cache layout."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..spec import LayerSpec
from .access import _Cfg
from .blocks import (
    _PRE_POST,
    _SANDWICH,
    _all_sliding_if_window,
    _attention,
    _attn_spec,
    _decoder,
    _every,
    _experts,
    _gated_deltanet,
    _kinds,
    _mamba1,
    _mamba2,
    _mla,
    _mlp,
    _qwen_rule,
    _sparse_moe_ffn,
    _stack,
    _Tensors,
)

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


