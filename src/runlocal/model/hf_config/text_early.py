"""Builders for the 2023-era text families with their own layouts: GPT-NeoX (Pythia, StableLM-Alpha,
StableCode-Alpha), StableLM (3B-4E1T, Zephyr, Stable Code), OLMo 1, Falcon (7B/40B/180B) and DBRX. Each mirrors
transformers 5.24's models/<family>/modeling_*.py (the parameter names ``named_parameters()`` reports) and
returns the decoder layers' cache layout; every one of them keeps a plain full-attention KV cache."""

from __future__ import annotations

from typing import Any

from ..spec import AttentionSpec, LayerSpec
from .access import _Cfg
from .blocks import _PRE_POST, _attention, _attn_spec, _decoder, _stack, _Tensors


def _gpt_neox(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # GPTNeoXLayer: LayerNorms with bias before attention and MLP (parallel or sequential residual, same tensors),
    # fused biased query_key_value (3 × hidden), biased dense, biased dense_h_to_4h / dense_4h_to_h
    h, ff = c.h, c.int("intermediate_size")
    bias = c.flag("attention_bias", True)

    def layer(i: int, q: str) -> LayerSpec:
        t.norm(q + "input_layernorm", h, i, bias=True)
        t.norm(q + "post_attention_layernorm", h, i, bias=True)
        t.linear(q + "attention.query_key_value", 3 * h, h, "attn_qkv", i, bias)
        t.linear(q + "attention.dense", h, h, "attn_o", i, bias)
        t.linear(q + "mlp.dense_h_to_4h", ff, h, "ffn_up", i, True)
        t.linear(q + "mlp.dense_4h_to_h", h, ff, "ffn_down", i, True)
        return LayerSpec(_attn_spec(c, "full"))

    return _stack(c, t, p, layer, embed="embed_in", final="final_layer_norm", final_bias=True)


def _stablelm(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # StableLmDecoderLayer: Llama projections (q/k/v bias from use_qkv_bias), gated MLP, LayerNorms with bias;
    # qk_layernorm (StableLM 2 12B) keeps one LayerNorm per head, stored as norms.<head>
    hd = c.head_dim

    def layer(i: int, q: str) -> LayerSpec:
        _attention(t, c, q + "self_attn.", i, qkv_bias=c.flag("use_qkv_bias"))
        if c.flag("qk_layernorm"):
            for name, n in (("q_layernorm", c.heads), ("k_layernorm", c.kv_heads)):
                for head in range(n):
                    t.norm(f"{q}self_attn.{name}.norms.{head}", hd, i)
        for name, out, inp, role in (("gate_proj", c.int("intermediate_size"), c.h, "ffn_gate"),
                                     ("up_proj", c.int("intermediate_size"), c.h, "ffn_up"),
                                     ("down_proj", c.h, c.int("intermediate_size"), "ffn_down")):
            t.linear(q + "mlp." + name, out, inp, role, i)
        t.norm(q + "input_layernorm", c.h, i, bias=True)
        if not c.flag("use_parallel_residual"):
            t.norm(q + "post_attention_layernorm", c.h, i, bias=True)
        return LayerSpec(_attn_spec(c, "full"))

    return _stack(c, t, p, layer, final_bias=True)


def _olmo(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # OLMo 1: OlmoLayerNorm has no parameters (no weight, no bias), so the layers hold projections only
    bias = c.flag("attention_bias")
    layers = _decoder(c, t, p, attn={"qkv_bias": bias, "o_bias": bias}, norms=())
    t.items = [x for x in t.items if x.name != p + "norm.weight"]        # the final norm is parameter-free too
    return layers


def _falcon(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # FalconDecoderLayer: fused query_key_value holding heads + 2 × KV heads (new_decoder_architecture: num_kv_heads
    # groups; multi_query: one K/V head; else MHA), dense, 4 × hidden MLP; LayerNorms with bias: ln_attn + ln_mlp
    # (new architecture, num_ln_in_parallel_attn 2) or input_layernorm (+ post_attention_layernorm when the
    # attention and MLP are sequential)
    h, heads = c.h, c.heads
    hd = h // heads
    new = c.flag("new_decoder_architecture")
    kv = (c.get("num_kv_heads") or heads) if new else (1 if c.flag("multi_query", True) else heads)
    bias = c.flag("bias")
    ff = c.get("ffn_hidden_size") or 4 * h
    n_ln = c.get("num_ln_in_parallel_attn") or 2
    if c.flag("alibi"):
        t.notes.append("Falcon with ALiBi (no rotary embedding) is read as a plain full-attention decoder")
    t.add(f"{p}word_embeddings.weight", (c.vocab, h), "embed")
    layers = []
    for i in range(c.n_layers):
        q = f"{p}h.{i}."
        t.linear(q + "self_attention.query_key_value", (heads + 2 * kv) * hd, h, "attn_qkv", i, bias)
        t.linear(q + "self_attention.dense", h, h, "attn_o", i, bias)
        t.linear(q + "mlp.dense_h_to_4h", ff, h, "ffn_up", i, bias)
        t.linear(q + "mlp.dense_4h_to_h", h, ff, "ffn_down", i, bias)
        if new and n_ln == 2:
            norms: tuple[str, ...] = ("ln_attn", "ln_mlp")
        else:
            norms = ("input_layernorm",) if c.flag("parallel_attn", True) else _PRE_POST
        for name in norms:
            t.norm(q + name, h, i, bias=True)
        layers.append(LayerSpec(AttentionSpec("full", kv, hd, hd, None)))
    t.norm(p + "ln_f", h, bias=True)
    return layers


def dbrx_flat(config: dict[str, Any]) -> dict[str, Any]:
    """DBRX's config with the fields other families spell flat (transformers DbrxConfig: attribute_map hidden_size →
    d_model, num_attention_heads → n_heads, num_hidden_layers → n_layers, max_position_embeddings → max_seq_len; the
    KV heads in attn_config.kv_n_heads, the experts in ffn_config: moe_num_experts, moe_top_k, ffn_hidden_size)."""
    attn, ffn = config.get("attn_config"), config.get("ffn_config")
    attn = attn if isinstance(attn, dict) else {}
    ffn = ffn if isinstance(ffn, dict) else {}
    flat = {"hidden_size": config.get("d_model"), "num_hidden_layers": config.get("n_layers"),
            "num_attention_heads": config.get("n_heads"), "max_position_embeddings": config.get("max_seq_len"),
            "num_key_value_heads": attn.get("kv_n_heads"), "num_local_experts": ffn.get("moe_num_experts"),
            "num_experts_per_tok": ffn.get("moe_top_k"), "intermediate_size": ffn.get("ffn_hidden_size")}
    return {**config, **{k: v for k, v in flat.items() if v is not None}}


def _dbrx(c: _Cfg, t: _Tensors, p: str) -> list[LayerSpec]:
    # DbrxBlock (transformers 5.24 models/dbrx): norm_1 → attention (fused Wqkv, out_proj, no biases) → norm_2 →
    # MoE (router.layer, then every expert's w1 / v1 / w2 stored stacked as (experts × ffn_hidden_size, d_model));
    # LayerNorms without bias; wte / norm_f / an untied lm_head
    h, heads, kv, hd = c.h, c.heads, c.kv_heads, c.head_dim
    n_exp, ff = c.int("num_local_experts"), c.int("intermediate_size")
    t.add(p + "wte.weight", (c.vocab, h), "embed")
    layers = []
    for i in range(c.n_layers):
        q = f"{p}blocks.{i}."
        t.norm(q + "norm_attn_norm.norm_1", h, i)
        t.linear(q + "norm_attn_norm.attn.Wqkv", (heads + 2 * kv) * hd, h, "attn_qkv", i)
        t.linear(q + "norm_attn_norm.attn.out_proj", h, heads * hd, "attn_o", i)
        t.norm(q + "norm_attn_norm.norm_2", h, i)
        t.linear(q + "ffn.router.layer", n_exp, h, "router", i)
        for name, role in (("w1", "expert_gate"), ("v1", "expert_up"), ("w2", "expert_down")):
            t.add(f"{q}ffn.experts.mlp.{name}", (n_exp * ff, h), role, i)
        layers.append(LayerSpec(_attn_spec(c, "full"), None, True))
    t.norm(p + "norm_f", h)
    return layers
