"""llama.cpp's graphs for Gemma 4 (``gemma4``).

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/gemma4.cpp llama_model_gemma4::graph::graph: the scaled embeddings, the iSWA cache pair, the per-layer
  embeddings (build_inp_per_layer: their own token input and rows of per_layer_token_embd; project_per_layer_inputs:
  per_layer_model_proj over the embeddings, normed, added, permuted to [n_embd_per_layer, n_tokens, n_layer]), Q / K
  normed with weights and V without, RoPE (rope_freqs on full layers), the last layers' shared KV (no K / V of their
  own: the cache of the last KV layer of their kind, llama-model.cpp), post-attention and post-FFN norms, the GELU FFN
  (and, in MoE layers, the router over the RMS-normed residual plus the experts), the per-layer embedding's gate,
  projection and norm, the layer scalar; the output rows gathered after the final norm
  (cparams.embeddings_nextn_masked false: the norm is res->t_h_nextn, a graph output);
- src/llama-graph.cpp build_attn (iSWA, k / v null for a shared layer), build_ffn, build_moe_ffn (arch.DecoderGraph).
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .blocks import dense_ffn
from .types import Tensor, row_size

if TYPE_CHECKING:    # arch.py registers these builders (and imports this module)
    from .arch import DecoderGraph


def shared_kv_layer(b: DecoderGraph, il: int) -> int:
    """The layer whose cache a shared-KV layer reads (llama-model.cpp: n_layer_kv_from_start − 2 for a sliding
    layer, − 1 for a full one). Whether it is sliding: the kind of KV layer whose head width its Q norm has, else
    the layer pattern's (the KV layers' period)."""
    layers = b.m.layers
    start = next(i for i, layer in enumerate(layers) if layer.attention is None)
    qn = b.w(f"blk.{il}.attn_q_norm.weight")
    kinds = {layer.attention.kind for layer in layers[:start] if qn is not None
             and layer.attention.k_dim == qn.ne[0]}
    if len(kinds) != 1:
        period = next(p for p in range(1, start + 1)
                      if all(layers[i].attention.kind == layers[i % p].attention.kind for i in range(start)))
        kinds = {layers[il % period].attention.kind}
    return start - 2 if kinds == {"sliding"} else start - 1


def per_layer_inputs(b: DecoderGraph, inpL: Tensor, n_per: int) -> Tensor:
    """build_inp_per_layer and project_per_layer_inputs: [n_embd_per_layer, n_tokens, n_layer]."""
    g, n_layer, n_tokens = b.g, b.m.n_layers, b.n_tokens
    tokens = b.inp("i32", (n_tokens,), "inp_per_layer_tokens")
    ple = g.get_rows(b.w("per_layer_token_embd.weight", -1), tokens)  # type: ignore[arg-type]
    ple = g.unary("SCALE", g.reshape(ple, n_per, n_layer, n_tokens))
    g.expand(ple)
    # per_layer_model_proj / per_layer_proj_norm: LLM_TENSOR_LAYER_REPEATING, created with layer 0 (llama-arch.cpp)
    proj = g.mul_mat(b.w("per_layer_model_proj.weight", 0), inpL)  # type: ignore[arg-type]
    proj = g.reshape(g.unary("SCALE", proj), n_per, n_layer, n_tokens)
    proj = b.norm(proj, b.w("per_layer_proj_norm.weight", 0))
    ple = g.unary("SCALE", g.add(proj, ple))
    return g.cont(g.permute(ple, 0, 2, 1, 3))


def attention(b: DecoderGraph, inp: dict, il: int, cur: Tensor, pos: Tensor) -> Tensor:
    """Gemma 4's attention block: Q always; K, V, their norms and the cache store only in a layer with KV."""
    g, a = b.g, b.m.layers[il].attention
    n_tokens = cur.ne[1]
    factors = b.w("rope_freqs.weight", il) if a is None or a.kind != "sliding" else None
    kv_layer = shared_kv_layer(b, il) if a is None else None
    hd = (a or b.m.layers[kv_layer].attention).k_dim
    n_head = b.lw(il, "attn_q.weight").ne[1] // hd  # type: ignore[union-attr]
    q = g.reshape(g.mul_mat(b.lw(il, "attn_q.weight"), cur), hd, n_head, n_tokens)  # type: ignore[arg-type]
    q = g.rope(b.norm(q, b.lw(il, "attn_q_norm.weight"), il=il), pos, factors)
    if a is None:
        return b.attn(inp, il, q, None, None, b.lw(il, "attn_output.weight"), None, kv_layer=kv_layer)
    k = g.mul_mat(b.lw(il, "attn_k.weight"), cur)  # type: ignore[arg-type]
    wv = b.lw(il, "attn_v.weight")
    v = g.mul_mat(wv, cur) if wv is not None else k
    k = g.reshape(k, hd, a.n_kv_heads, n_tokens)
    v = g.rms_norm(g.reshape(v, hd, a.n_kv_heads, n_tokens))
    k = g.rope(b.norm(k, b.lw(il, "attn_k_norm.weight"), il=il), pos, factors)
    return b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), None)


def ffn(b: DecoderGraph, il: int, attn_out: Tensor) -> Tensor:
    """The dense GELU FFN, or in an MoE layer the FFN (as shared expert) plus the routed experts."""
    g, m = b.g, b.m
    if b.lw(il, "ffn_gate_inp.weight") is None:
        return dense_ffn(b, b.norm(attn_out, b.lw(il, "ffn_norm.weight"), il=il), il)
    mlp = dense_ffn(b, b.norm(attn_out, b.lw(il, "ffn_norm.weight"), il=il), il)
    mlp = b.norm(mlp, b.lw(il, "post_ffw_norm_1.weight"), il=il)
    moe_in = b.norm(attn_out, b.lw(il, "pre_ffw_norm_2.weight"), il=il)
    tmp = g.mul(g.unary("SCALE", g.rms_norm(attn_out)), b.lw(il, "ffn_gate_inp.scale"))  # type: ignore[arg-type]
    logits = g.mul_mat(b.lw(il, "ffn_gate_inp.weight"), tmp)  # type: ignore[arg-type]
    moe = b.moe(moe_in, il, m.n_experts, m.n_experts_active, norm_w=True, act="gelu", logits=logits)
    moe = b.norm(moe, b.lw(il, "post_ffw_norm_2.weight"), il=il)
    return g.add(mlp, moe)


def build_gemma4(b: DecoderGraph) -> None:
    """llama_model_gemma4::graph::graph."""
    g, m = b.g, b.m
    inpL = g.unary("SCALE", b.build_inp_embd(), name="inp_scaled")
    pos = b.build_inp_pos()
    inp = b.kv_inputs_iswa()
    out_ids = b.build_inp_out_ids()
    ple_w = b.by_name.get("per_layer_token_embd.weight")
    ple = None
    if ple_w is not None:
        n_per = ple_w.numel // (m.vocab_size * m.n_layers)
        ple = per_layer_inputs(b, inpL, n_per)
    for il in b.layer_ids():
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        cur = attention(b, inp, il, cur, pos)
        cur = b.norm(cur, b.lw(il, "post_attention_norm.weight"), il=il)
        attn_out = g.add(cur, inpL)
        cur = b.norm(ffn(b, il, attn_out), b.lw(il, "post_ffw_norm.weight"))
        cur = g.add(cur, attn_out)
        if ple is not None:
            pe_in = cur
            cur = g.unary("UNARY", g.mul_mat(b.lw(il, "inp_gate.weight"), cur))  # type: ignore[arg-type]
            this = g.view(ple, (ple.ne[0], ple.ne[1]), (row_size(ple.type, ple.ne[0]),),
                          il * ple.ne[0] * ple.ne[1] * 4)
            cur = g.mul_mat(b.lw(il, "proj.weight"), g.mul(cur, this))  # type: ignore[arg-type]
            cur = g.add(pe_in, b.norm(cur, b.lw(il, "post_norm.weight"), il=il))
        scale = b.lw(il, "layer_output_scale.weight")
        inpL = g.mul(cur, scale) if scale is not None else cur
    b.output(inpL, out_ids=out_ids)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {"gemma4": build_gemma4}
