"""Builders for 2025-2026 text families: MiniMax M2 (M2.5, M2.7), GLM-4.5/4.6/4.7 (glm4_moe), OLMo 3 and
Nemotron-H (Mamba-2 / attention / MLP or MoE layers) and Gemma 4 (gemma4_text).
Each mirrors transformers 5.24's models/<family>/modeling_*.py (the parameter names ``named_parameters()``
reports) and returns the decoder layers' cache layout."""

from __future__ import annotations

from ...errors import ModelFormatError
from ..spec import AttentionSpec, LayerSpec
from .access import _Cfg
from .blocks import (
    _PRE_POST,
    _attention,
    _attn_spec,
    _decoder,
    _every,
    _experts,
    _kinds,
    _mamba2,
    _mlp,
    _stack,
    _Tensors,
)


def _minimax_m2(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # MiniMaxM2DecoderLayer: full attention with RMSNorm over all q / all k heads (qk_norm_type per_layer), then
    # num_local_experts routed experts intermediate_size wide (sigmoid router; its e_score_correction_bias is a
    # buffer). The checkpoint's MTP modules (num_mtp_modules) are not built by transformers and not counted.
    n_exp = c.int("num_local_experts")
    if c.get("use_mtp") and c.get("num_mtp_modules"):
        t.notes.append(f"num_mtp_modules={c.get('num_mtp_modules')}: the checkpoint's multi-token-prediction modules "
                       "are not built by transformers and are not counted")

    def ffn(i: int, q: str) -> bool:
        t.add(q + "mlp.gate.weight", (n_exp, c.h), "router", i)
        _experts(t, q + "mlp.experts.", n_exp, c.h, c.int("intermediate_size"), i)
        return True

    qk = "all" if c.flag("use_qk_norm", True) else None
    return _decoder(c, t, p, attn={"qk_norm": qk}, ffn=ffn)


def _glm4_moe(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # Glm4MoeDecoderLayer: attention with biased q/k/v (attention_bias) and optional per-head q/k RMSNorm
    # (use_qk_norm), a dense MLP in the first first_k_dense_replace layers, then n_routed_experts experts +
    # n_shared_experts shared experts (moe_intermediate_size wide). The MTP layer(s) past num_hidden_layers
    # (num_nextn_predict_layers) are in the checkpoint but not built by transformers.
    n_exp, dense = c.int("n_routed_experts"), c.get("first_k_dense_replace") or 0
    moe_ff = c.int("moe_intermediate_size")
    shared_ff = moe_ff * (c.get("n_shared_experts") or 0)
    bias = c.flag("attention_bias")
    mtp = c.get("num_nextn_predict_layers") or 0
    if mtp:
        t.notes.append(f"num_nextn_predict_layers={mtp}: the checkpoint's multi-token-prediction layer "
                       f"(model.layers.{c.n_layers}.*) is not built by transformers and is not counted")

    def layer(i: int, q: str) -> LayerSpec:
        _attention(t, c, q + "self_attn.", i, qkv_bias=bias, qk_norm="head" if c.flag("use_qk_norm") else None)
        moe = i >= dense
        if moe:
            _experts(t, q + "mlp.experts.", n_exp, c.h, moe_ff, i)
            t.add(q + "mlp.gate.weight", (n_exp, c.h), "router", i)
            if shared_ff:
                _mlp(t, q + "mlp.shared_experts.", c.h, shared_ff, i, kind="shared")
        else:
            _mlp(t, q + "mlp.", c.h, c.int("intermediate_size"), i)
        for n in _PRE_POST:
            t.norm(q + n, c.h, i)
        return LayerSpec(_attn_spec(c, "full"), None, moe)

    return _stack(c, t, p, layer)


def _olmo3(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # OLMo 3: OLMo 2's layer (q/k RMSNorm over all heads, post-attention and post-feed-forward norms) with
    # sliding-window attention on three layers of four (layer_types; Olmo3Config's default pattern)
    bias = c.flag("attention_bias")
    return _decoder(c, t, p, kinds=_kinds(c, _every("", 4)), attn={"qkv_bias": bias, "o_bias": bias, "qk_norm": "all"},
                    norms=("post_attention_layernorm", "post_feedforward_layernorm"))


_NEMOTRON_H_KINDS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe", "linear_attention": "mamba",
                     "mamba": "mamba", "full_attention": "attention", "attention": "attention", "mlp": "mlp",
                     "moe": "moe"}


def _nemotron_h(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # NemotronHBlock: one RMSNorm then one mixer per layer, of the kind hybrid_override_pattern (M Mamba-2,
    # * attention, - MLP, E MoE) or layers_block_type names; MLP (up/down, relu2) and MoE layers keep no cache
    pattern = c.get("hybrid_override_pattern") or c.get("layers_block_type") or []
    kinds = [_NEMOTRON_H_KINDS.get(x, "") for x in pattern]
    if len(kinds) != c.n_layers or "" in kinds:
        raise ModelFormatError(f"{c.where}: hybrid_override_pattern / layers_block_type must give one of M * - E per "
                               f"layer ({c.n_layers} layers)")
    h, heads, hd = c.h, c.int("mamba_num_heads"), c.int("mamba_head_dim")
    n_exp = c.get("n_routed_experts") or 0
    c = _Cfg({**c.d, "head_dim": c.get("head_dim") or c.get("attention_head_dim")}, c.model_type, c.where)

    def layer(i: int, q: str) -> LayerSpec:
        t.norm(q + "norm", h, i)
        m, att, rec = q + "mixer.", None, None
        if kinds[i] == "mamba":
            rec = _mamba2(t, m, i, h=h, d_inner=heads * hd, heads=heads, head_dim=hd, groups=c.int("n_groups"),
                          d_state=c.int("ssm_state_size"), d_conv=c.int("conv_kernel"),
                          conv_bias=c.flag("use_conv_bias", True), proj_bias=c.flag("mamba_proj_bias"),
                          out_bias=c.flag("mamba_proj_bias"), gated_norm=True, chunk_size=c.get("chunk_size") or 0)
        elif kinds[i] == "attention":
            bias = c.flag("attention_bias")
            _attention(t, c, m, i, qkv_bias=bias, o_bias=bias)
            att = _attn_spec(c, "full")
        elif kinds[i] == "mlp":
            ff = c.int("intermediate_size")
            t.linear(m + "up_proj", ff, h, "ffn_up", i, c.flag("mlp_bias"))
            t.linear(m + "down_proj", h, ff, "ffn_down", i, c.flag("mlp_bias"))
        else:
            ff = c.int("moe_intermediate_size")
            t.add(m + "gate.weight", (n_exp, h), "router", i)
            t.add(m + "experts.up_proj", (n_exp, ff, h), "expert_up", i)
            t.add(m + "experts.down_proj", (n_exp, h, ff), "expert_down", i)
            shared = c.int("moe_shared_expert_intermediate_size")
            t.linear(m + "shared_experts.up_proj", shared, h, "shared_up", i)
            t.linear(m + "shared_experts.down_proj", h, shared, "shared_down", i)
        return LayerSpec(att, rec, kinds[i] == "moe")

    return _stack(c, t, p, layer, embed="embeddings", final="norm_f")


def _gemma4(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    """Gemma 4 text (transformers 5.24 models/gemma4: Gemma4TextConfig, Gemma4TextModel, Gemma4TextDecoderLayer,
    Gemma4TextAttention, Gemma4TextMLP), per layer kind:

    - layer_types: as given, else 5 sliding : 1 full (sliding_window_pattern 6), the last layer forced full
      (Gemma4TextConfig.__post_init__).
    - full layers: head_dim global_head_dim (default 512) and, when attention_k_eq_v, num_global_key_value_heads
      KV heads and no v_proj (K is reused as V: use_alternative_attention) — per_layer_config.
    - KV sharing: the last num_kv_shared_layers layers have no k_proj / v_proj / k_norm and read the cache of the
      last earlier layer of their kind (kv_sharing_modes "reuse"): no KV cache of their own; with
      use_double_wide_mlp their MLP is 2 × intermediate_size wide (Gemma4TextMLP).
    - per-layer embeddings (hidden_size_per_layer_input > 0): embed_tokens_per_layer (vocab_size_per_layer_input ×
      layers·d), per_layer_model_projection, per_layer_projection_norm; per layer a gate, a projection and a norm.
    - enable_moe_block: every layer keeps its dense MLP and adds a router (scale, per_expert_scale, proj) and
      num_experts experts moe_intermediate_size wide, with three more norms.
    v_norm has no weight (with_scale=False); layer_scalar and the embedding scales are buffers, not counted."""
    n, h, heads = c.n_layers, c.h, c.heads
    types = c.get("layer_types")
    if not (isinstance(types, list) and len(types) == n):
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
    kinds = ["full" if x == "full_attention" else "sliding" for x in types]
    kinds[-1] = "full"
    shared_from = n - int(c.get("num_kv_shared_layers") or 0)
    if any(k not in kinds[:shared_from] for k in set(kinds[shared_from:])):
        raise ModelFormatError(f"{c.where}: num_kv_shared_layers {n - shared_from} leaves a shared layer kind with no "
                               "earlier layer of that kind to read its KV cache from")
    k_eq_v, ff, ple = c.flag("attention_k_eq_v"), c.int("intermediate_size"), int(c.get("hidden_size_per_layer_input") or 0)
    moe = c.flag("enable_moe_block")
    g_hd = int(c.get("global_head_dim") or 512)
    g_kv = int(c.get("num_global_key_value_heads") or 0) if k_eq_v else 0

    def layer(i: int, q: str) -> LayerSpec:
        full = kinds[i] == "full"
        hd, kv = (g_hd, g_kv or c.kv_heads) if full else (c.head_dim, c.kv_heads)
        shared = i >= shared_from
        a = q + "self_attn."
        t.linear(a + "q_proj", heads * hd, h, "attn_q", i)
        t.norm(a + "q_norm", hd, i)
        if not shared:
            t.norm(a + "k_norm", hd, i)
            t.linear(a + "k_proj", kv * hd, h, "attn_k", i)
            if not (k_eq_v and full):
                t.linear(a + "v_proj", kv * hd, h, "attn_v", i)
        t.linear(a + "o_proj", h, heads * hd, "attn_o", i)
        _mlp(t, q + "mlp.", h, ff * (2 if shared and c.flag("use_double_wide_mlp") else 1), i)
        for x in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            t.norm(q + x, h, i)
        if ple:
            t.linear(q + "per_layer_input_gate", ple, h, "ffn_gate", i)
            t.linear(q + "per_layer_projection", h, ple, "ffn_down", i)
            t.norm(q + "post_per_layer_input_norm", h, i)
        if moe:
            n_exp = c.int("num_experts")
            t.add(q + "router.scale", (h,), "router", i)
            t.add(q + "router.per_expert_scale", (n_exp,), "router", i)
            t.add(q + "router.proj.weight", (n_exp, h), "router", i)
            _experts(t, q + "experts.", n_exp, h, c.int("moe_intermediate_size"), i)
            for x in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"):
                t.norm(q + x, h, i)
        window = c.int("sliding_window") if not full else None
        spec = AttentionSpec("sliding" if window else "full", kv, hd, hd, window)
        return LayerSpec(None if shared else spec, None, moe)

    layers = _stack(c, t, p, layer)
    if ple:
        t.add(p + "embed_tokens_per_layer.weight", (c.int("vocab_size_per_layer_input"), n * ple), "embed")
        t.linear(p + "per_layer_model_projection", n * ple, h, "ffn_up")
        t.norm(p + "per_layer_projection_norm", ple)
    if shared_from < n:
        t.notes.append(f"Gemma 4 KV sharing: the last {n - shared_from} of {n} layers read the KV cache of an earlier "
                       "layer of their kind and keep none of their own")
    return layers
