"""llama.cpp's graphs for the Mamba-2 hybrids beyond Granite 4.0-H: Nemotron-H (``nemotron_h``) and Nemotron 3
(``nemotron_h_moe``). Mamba-2, attention and FFN-only blocks, each one residual block of its own.

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/nemotron-h.cpp: llama_model_nemotron_h::graph::graph, build_attention_layer (no RoPE),
  build_ffn_layer (squared-ReLU FFN, or sigmoid-routed experts with a shared expert);
- src/models/mamba-base.cpp build_mamba2_layer (arch._mamba2), src/llama-graph.cpp build_inp_mem_hybrid, build_ffn
  (LLM_FFN_RELU_SQR: ggml_relu then ggml_sqr), build_moe_ffn.
cparams.embeddings_nextn_masked is false (src/llama-context.cpp), so no block gathers the output rows: every block
runs over the whole ubatch, and the rows are gathered after the final norm (which is itself a graph output,
res->t_h_nextn) — the reason these graphs' buffers are larger than the fitted formula's.
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .types import FLAG_OUTPUT, Tensor

if TYPE_CHECKING:    # arch.py registers these builders (and imports this module)
    from .arch import DecoderGraph


def _relu_sqr_ffn(b: DecoderGraph, cur: Tensor, il: int, kind: str = "") -> Tensor:
    """build_ffn(up, up_b, down, down_b, LLM_FFN_RELU_SQR, LLM_FFN_PAR) with no gate: up, relu, sqr, down."""
    g = b.g
    x = g.mul_mat(b.lw(il, f"ffn_up{kind}.weight"), cur)  # type: ignore[arg-type]
    up_b = b.lw(il, f"ffn_up{kind}.bias")
    if up_b is not None:
        x = g.add(x, up_b)
    x = g.unary("SQR", g.unary("UNARY", x))
    x = g.mul_mat(b.lw(il, f"ffn_down{kind}.weight"), x)  # type: ignore[arg-type]
    down_b = b.lw(il, f"ffn_down{kind}.bias")
    return g.add(x, down_b) if down_b is not None else x


def build_nemotron_h(b: DecoderGraph) -> None:
    """llama_model_nemotron_h::graph::graph: norm, then a Mamba-2 mixer, attention or an FFN, and the residual."""
    from .arch import _mamba2, _qkv

    g, m = b.g, b.m
    inpL = b.build_inp_embd()
    # build_inp_mem_hybrid: build_rs_inp_impl (the state-copy input), then the attention inputs
    mem = max(1, b.n_seqs)
    s_copy = b.inp("i32", (mem,), "rs_s_copy")
    rs = {"main": g.view(s_copy, (b.n_seqs,), (), 0),
          "extra": g.view(s_copy, (mem - b.n_seqs,), (), b.n_seqs * s_copy.nb[0])}
    inp = b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        layer = m.layers[il]
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        if layer.recurrent is not None:
            cur = _mamba2(b, rs, cur, il)
        elif layer.attention is not None:
            a = layer.attention
            q, k, v = _qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
            cur = b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"))
        elif b.lw(il, "ffn_gate_inp.weight") is None:
            cur = _relu_sqr_ffn(b, cur, il)
        else:
            cur = _moe_layer(b, cur, il)
        inpL = g.add(cur, inpSA)
    cur = b.norm(inpL, b.w("output_norm.weight"))
    cur.flags |= FLAG_OUTPUT                    # res->t_h_nextn
    cur = g.get_rows(cur, out_ids)
    cur.flags |= FLAG_OUTPUT                    # res->t_embd
    head = b.w("output.weight") or b.w("token_embd.weight", m.n_layers)
    assert head is not None
    cur = g.mul_mat(head, cur, name="result_output")
    cur.flags |= FLAG_OUTPUT
    g.expand(cur)


def _moe_layer(b: DecoderGraph, cur: Tensor, il: int) -> Tensor:
    """build_ffn_layer's MoE branch: sigmoid-routed experts (with the selection bias ffn_exp_probs_b, squared-ReLU
    experts with no gate) plus a squared-ReLU shared expert; the optional latent projections around the experts."""
    g, m = b.g, b.m
    lat_down, lat_up = b.lw(il, "ffn_latent_down.weight"), b.lw(il, "ffn_latent_up.weight")
    inp = g.mul_mat(lat_down, cur) if lat_down is not None else cur
    logits = g.mul_mat(b.lw(il, "ffn_gate_inp.weight"), cur)  # type: ignore[arg-type]
    out = b.moe(inp, il, m.n_experts, m.n_experts_active, norm_w=True, gating="sigmoid",
                exp_probs_b=b.lw(il, "exp_probs_b.bias"), w_scale=True, act="relu_sqr", logits=logits)
    if lat_up is not None:
        out = g.mul_mat(lat_up, out)
    return g.add(out, _relu_sqr_ffn(b, cur, il, "_shexp"))


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {"nemotron_h": build_nemotron_h,
                                                       "nemotron_h_moe": build_nemotron_h}
