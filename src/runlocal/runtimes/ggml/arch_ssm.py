"""llama.cpp's graphs for the state-space hybrids beyond Granite 4.0-H: Nemotron-H (``nemotron_h``) and Nemotron 3
(``nemotron_h_moe``) — Mamba-2, attention and FFN-only blocks, each one residual block of its own —, Jamba
(``jamba``): Mamba-1 or attention, then a dense or MoE FFN, in every block; Falcon-H1 (``falcon-h1``): attention and
Mamba-2 side by side in every block, then an FFN; and Mamba (``mamba``): Mamba-1 blocks alone.

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/nemotron-h.cpp: llama_model_nemotron_h::graph::graph, build_attention_layer (no RoPE),
  build_ffn_layer (squared-ReLU FFN, or sigmoid-routed experts with a shared expert);
- src/models/jamba.cpp llama_model_jamba::graph::graph (no RoPE; softmax-routed experts, weights not normalized);
- src/models/falcon-h1.cpp, mamba.cpp (build_rs_inp: the state-copy input alone);
- src/models/mamba-base.cpp build_mamba_layer (_mamba1, cparams.n_rs_seq 0) and build_mamba2_layer (blocks.mamba2),
  src/llama-graph.cpp build_inp_mem_hybrid, build_ffn
  (LLM_FFN_RELU_SQR: ggml_relu then ggml_sqr), build_moe_ffn.
cparams.embeddings_nextn_masked is false (src/llama-context.cpp), so no block gathers the output rows: every block
runs over the whole ubatch, and the rows are gathered after the final norm (which is itself a graph output,
res->t_h_nextn) — the reason these graphs' buffers are larger than the fitted formula's.
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .blocks import attention, dense_ffn, last_rows, mamba2
from .graph import conv_channels
from .recurrent import build_rs
from .types import Tensor

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
    g, m = b.g, b.m
    inpL = b.build_inp_embd()
    rs = _rs_inputs(b)          # build_inp_mem_hybrid: the state-copy input, then the attention inputs
    inp = b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        layer = m.layers[il]
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        if layer.recurrent is not None:
            cur = mamba2(b, rs, cur, il)
        elif layer.attention is not None:
            cur = attention(b, inp, il, cur, None, out_bias=True)
        elif b.lw(il, "ffn_gate_inp.weight") is None:
            cur = _relu_sqr_ffn(b, cur, il)
        else:
            cur = _moe_layer(b, cur, il)
        inpL = g.add(cur, inpSA)
    b.output(inpL, out_ids=out_ids)       # the final norm is res->t_h_nextn, its rows res->t_embd


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


def _rs_inputs(b: DecoderGraph) -> dict:
    """build_inp_mem_hybrid's recurrent half (build_rs_inp_impl): the state-copy input and its two views."""
    mem = max(1, b.n_seqs)
    s_copy = b.inp("i32", (mem,), "rs_s_copy")
    return {"main": b.g.view(s_copy, (b.n_seqs,), (), 0),
            "extra": b.g.view(s_copy, (mem - b.n_seqs,), (), b.n_seqs * s_copy.nb[0])}


def _mamba1(b: DecoderGraph, rs: dict, cur: Tensor, il: int) -> Tensor:
    """mamba-base.cpp build_mamba_layer: in_proj to x and z, the causal conv over the cached window, the x
    projection to dt / B / C (RMS-normed where the layer has ssm_dt_norm / ssm_b_norm / ssm_c_norm: Jamba),
    ssm_scan with one head per channel, the gate and out_proj."""
    g = b.g
    n_seqs = b.n_seqs
    n_seq_tokens = cur.ne[1] // n_seqs
    conv_w, in_w, x_w = b.lw(il, "ssm_conv1d.weight"), b.lw(il, "ssm_in.weight"), b.lw(il, "ssm_x.weight")
    assert conv_w is not None and in_w is not None and x_w is not None
    d_conv, d_inner = conv_w.ne[0], conv_channels(conv_w)
    rec = b.m.layers[il].recurrent
    n_embd_r, n_embd_s = rec.conv_elems, rec.state_elems
    d_state = n_embd_s // d_inner
    dt_rank = x_w.ne[1] - 2 * d_state
    mem, f = max(1, n_seqs), 4
    r_all = g.weight("f32", (n_embd_r, mem), f"cache_r_l{il}", il)
    s_all = g.weight("f32", (n_embd_s, mem), f"cache_s_l{il}", il)
    conv = g.reshape(build_rs(b, rs, r_all, n_embd_r), d_conv - 1, d_inner, n_seqs)
    cur = g.reshape(cur, cur.ne[0], n_seq_tokens, n_seqs)
    xz = g.mul_mat(in_w, cur)
    x = g.view(xz, (d_inner, xz.ne[1], xz.ne[2]), (xz.nb[1], xz.nb[2]), 0)
    z = g.view(xz, (d_inner, xz.ne[1], xz.ne[2]), (xz.nb[1], xz.nb[2]), d_inner * f)
    conv_x = g.concat(conv, g.transpose(x), 0)
    last = g.view(conv_x, (d_conv - 1, d_inner, n_seqs), (conv_x.nb[1], conv_x.nb[2]), n_seq_tokens * conv_x.nb[0])
    g.expand(g.cpy(last, g.view(r_all, ((d_conv - 1) * d_inner * n_seqs,), (), 0)))
    x = g.unary("UNARY", g.add(g.ssm_conv(conv_x, conv_w), b.lw(il, "ssm_conv1d.bias")))  # type: ignore[arg-type]
    x_db = g.mul_mat(x_w, x)
    dt = g.view(x_db, (dt_rank, n_seq_tokens, n_seqs), (x_db.nb[1], x_db.nb[2]), 0)
    B = g.view(x_db, (d_state, 1, n_seq_tokens, n_seqs), (d_state * f, x_db.nb[1], x_db.nb[2]), f * dt_rank)
    C = g.view(x_db, (d_state, 1, n_seq_tokens, n_seqs), (d_state * f, x_db.nb[1], x_db.nb[2]),
               f * (dt_rank + d_state))
    norms = [b.lw(il, f"ssm_{n}_norm.weight") for n in ("dt", "b", "c")]
    if all(w is not None for w in norms):
        dt, B, C = (b.norm(t, w, il=il) for t, w in zip((dt, B, C), norms))
    else:
        dt = g.cont(dt)
    dt = g.add(g.mul_mat(b.lw(il, "ssm_dt.weight"), dt), b.lw(il, "ssm_dt.bias"))  # type: ignore[arg-type]
    cur = x
    x = g.reshape(x, 1, d_inner, n_seq_tokens, n_seqs)
    A = b.lw(il, "ssm_a")
    assert A is not None

    def ssm_rows(states: Tensor, ids: Tensor) -> Tensor:
        return g.ssm_scan(g.reshape(states, d_state, 1, d_inner, mem), x, dt, A, B, C, ids)

    y_ssm = build_rs(b, rs, s_all, n_embd_s, ssm_rows)
    n_s = d_state * d_inner * n_seqs
    g.expand(g.cpy(g.view(y_ssm, (n_s,), (), x.nb[3] * x.ne[3]), g.view(s_all, (n_s,), (), 0)))
    y = g.view(y_ssm, (d_inner, n_seq_tokens, n_seqs), (x.nb[2], x.nb[3]), 0)
    y = g.add(y, g.mul(cur, b.lw(il, "ssm_d")))  # type: ignore[arg-type]
    y = g.glu_split(g.cont(z), y)
    cur = g.mul_mat(b.lw(il, "ssm_out.weight"), y)  # type: ignore[arg-type]
    return g.reshape(cur, cur.ne[0], n_seq_tokens * n_seqs)


def build_jamba(b: DecoderGraph) -> None:
    """llama_model_jamba::graph::graph: norm, Mamba-1 or attention, the residual, norm, a dense or MoE FFN."""
    g, m = b.g, b.m
    inpL = b.build_inp_embd()
    rs = _rs_inputs(b)
    inp = b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        layer = m.layers[il]
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        if layer.attention is None:
            cur = _mamba1(b, rs, cur, il)
        else:
            cur = attention(b, inp, il, cur, None)
        cur, inpL = last_rows(b, il, out_ids, cur, inpL)
        ffn_inp = g.add(inpL, cur)
        cur = b.norm(ffn_inp, b.lw(il, "ffn_norm.weight"), il=il)
        if b.lw(il, "ffn_gate_inp.weight") is None:
            cur = dense_ffn(b, cur, il)
        else:
            cur = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=False)
        inpL = g.add(ffn_inp, cur)
    b.output(inpL)


def build_falcon_h1(b: DecoderGraph) -> None:
    """llama_model_falcon_h1::graph::graph: attention (RoPE) and a Mamba-2 mixer over the same normed input, their
    sum and the residual, then the FFN. The norm is built twice (build_norm per branch), and the gather of the
    last block's mixer sum is never expanded (cur is reassigned), so only the residual's rows are gathered."""
    g, m = b.g, b.m
    inpL = b.build_inp_embd()
    pos = b.build_inp_pos()
    rs = _rs_inputs(b)
    inp = b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        attn_out = attention(b, inp, il, cur, pos)
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        cur = g.add(attn_out, mamba2(b, rs, cur, il))
        inpSA = g.add(cur, inpSA)
        if il == m.n_layers - 1:
            inpSA = g.get_rows(inpSA, out_ids)
        # llama.cpp loads this norm as tn(LLM_TENSOR_FFN_NORM, i): "blk.N.ffn_norm", no ".weight"
        cur = b.norm(inpSA, b.lw(il, "ffn_norm") or b.lw(il, "ffn_norm.weight"), il=il)
        cur = b.ffn(cur, b.lw(il, "ffn_up.weight"), b.lw(il, "ffn_gate.weight"), b.lw(il, "ffn_down.weight"),  # type: ignore[arg-type]
                    up_b=b.lw(il, "ffn_up.bias"), down_b=b.lw(il, "ffn_down.bias"))
        inpL = g.add(cur, inpSA)
    b.output(inpL)


def build_mamba(b: DecoderGraph) -> None:
    """llama_model_mamba::graph::graph for Mamba-1: norm, the mixer, the residual."""
    g = b.g
    inpL = b.build_inp_embd()
    rs = _rs_inputs(b)
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        cur = _mamba1(b, rs, b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il), il)
        cur, inpL = last_rows(b, il, out_ids, cur, inpL)
        inpL = g.add(cur, inpL)
    b.output(inpL)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {"nemotron_h": build_nemotron_h,
                                                       "nemotron_h_moe": build_nemotron_h, "jamba": build_jamba,
                                                       "falcon-h1": build_falcon_h1, "mamba": build_mamba}
