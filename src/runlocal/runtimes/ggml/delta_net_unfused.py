"""The gated delta net as llama.cpp built it before the fused GGML_OP_GATED_DELTA_NET took its place in the graph:
the chunked graph for a prompt ubatch and the autoregressive one for a single token (src/models/delta-net-base.cpp
build_delta_net_chunking and build_delta_net_autoregressive, in the form they have at llama.cpp b8250, read as
vendored by ollama/ollama at e22e88d5d "Update to b8250"; the same code at b8099, e4d75b8c5). Node for node and in
their expansion order, which decides ggml-alloc's placement: chunks of 64 tokens, a per-chunk loop whose state is
the transposed f32 state, written back through ggml_set_inplace.

Which builds: the autoregressive graph until b8099 (b8233, ollama 577db53ef, sets cparams.fused_gdn_ar), the
chunked one until b8250 (b8301, ollama 97962bd03, sets fused_gdn_ch with auto_fgdn) — runtimes/versions.py.
Checked against ggml-org/llama.cpp#20587's node counts (measurements/llamacpp_qwen35/public.jsonl). Pure
computation, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .types import Tensor, row_size

if TYPE_CHECKING:
    from .arch import DecoderGraph

CHUNK = 64          # build_delta_net_chunking: CS = kda ? 16 : 64 (Qwen's gate is per head: 64)


def _slice(g, t: Tensor, c: int) -> Tensor:
    """get_slice_2d: one slice of the third dimension, [x, y, 1, b]."""
    return g.view(t, (t.ne[0], t.ne[1], 1, t.ne[3]), (t.nb[1], t.nb[2], t.nb[3]), t.nb[2] * c)


def _pad(g, a: Tensor, pad: int) -> Tensor:
    """ggml_pad(a, 0, pad, 0, 0): a new tensor even when nothing is padded."""
    return g.new(a.type, (a.ne[0], a.ne[1] + pad, a.ne[2], a.ne[3]), "PAD", (a,))


def chunking(b: DecoderGraph, q: Tensor, k: Tensor, v: Tensor, gate: Tensor, beta: Tensor, s: Tensor
             ) -> tuple[Tensor, Tensor]:
    """build_delta_net_chunking (GDA: a gate per head) → (output [S_v, H_v, n_tokens, n_seqs], new state)."""
    g = b.g
    s_k, h_k, n_tokens, n_seqs = q.ne
    s_v, h_v = v.ne[0], v.ne[1]
    q = g.unary("SCALE", q)
    q, k, v = (g.permute(x, 0, 2, 1, 3) for x in (q, k, v))
    gate, beta = g.permute(gate, 0, 2, 1, 3), g.permute(beta, 0, 2, 1, 3)
    pad = (CHUNK - n_tokens % CHUNK) % CHUNK
    n_chunks = (n_tokens + pad) // CHUNK
    q, k, v, gate, beta = (_pad(g, x, pad) for x in (q, k, v, gate, beta))
    v_b = g.mul(v, beta)
    k_b = g.mul(k, beta)
    q = g.reshape(q, s_k, CHUNK, n_chunks, h_k * n_seqs)
    k = g.reshape(k, s_k, CHUNK, n_chunks, h_k * n_seqs)
    k_b = g.reshape(k_b, s_k, CHUNK, n_chunks, h_v * n_seqs)
    v = g.reshape(v, s_v, CHUNK, n_chunks, h_v * n_seqs)
    v_b = g.reshape(v_b, s_v, CHUNK, n_chunks, h_v * n_seqs)
    gate = g.reshape(gate, gate.ne[0], CHUNK, n_chunks, h_v * n_seqs)
    # (b is reshaped too, and not read again: not in the graph)
    g_t = g.cont(g.transpose(gate))
    g_cs = g.dup(g_t, "CUMSUM", (g_t,))                            # [CS, 1, n_chunks, H_v × n_seqs]
    g_cs_j = g.reshape(g_cs, 1, CHUNK, n_chunks, h_v * n_seqs)
    g_cs_j = g.new("f32", (CHUNK, CHUNK, n_chunks, h_v * n_seqs), "REPEAT", (g_cs_j,))
    decay = g.unary("SUB", g_cs_j, g_cs)
    decay = g.unary("UNARY", g.dup(decay, "TRI", (decay,)))      # exp(tri(g_cs_j − g_cs_i))
    kb = g.mul(g.mul_mat(k, k_b), decay)
    kq = g.mul(g.mul_mat(k, q), decay)
    kq = g.dup(kq, "TRI", (kq,))
    attn = g.dup(kb, "TRI", (kb,))
    identity = g.view(attn, (CHUNK,))
    identity = g.dup(identity, "FILL", (identity,))
    identity = g.new(identity.type, (CHUNK, CHUNK, 1, 1), "DIAG", (identity,))
    lhs = g.add(attn, identity)
    attn = g.unary("UNARY", attn)                                 # neg
    solved = g.new("f32", attn.ne, "SOLVE_TRI", (lhs, attn))
    attn = g.add(solved, identity)
    v = g.mul_mat(g.cont(g.transpose(v_b)), attn)
    g_exp = g.unary("UNARY", g_cs)
    k_b = g.cont(g.transpose(k_b))
    kbg = g.mul(k_b, g_exp)
    k_cd = g.mul_mat(kbg, attn)
    g_exp_t = g.cont(g.transpose(g_exp))
    q_g_exp = g.mul(q, g_exp_t)
    g_last = g.view(g_cs, (1, g_cs.ne[1], g_cs.ne[2], g_cs.ne[3]), (g_cs.nb[1], g_cs.nb[2], g_cs.nb[3]),
                    row_size(g_cs.type, g_cs.ne[0] - 1))
    g_last = g.cont(g_last)
    g_last_exp_t = g.transpose(g.unary("UNARY", g_last))
    g_diff = g.unary("UNARY", g.unary("SUB", g_cs, g_last))       # neg(g_cs - g_last)
    g_diff_exp_t = g.cont(g.transpose(g.unary("UNARY", g_diff)))
    kg = g.mul(k, g_diff_exp_t)
    kg_t = g.cont(g.transpose(kg))
    s_t = g.cont(g.transpose(s), s_v, s_v, 1, h_v * n_seqs)
    v_t = g.cont(g.transpose(v))
    for c in range(n_chunks):
        ch_k_cd, ch_v_t, ch_kq = _slice(g, k_cd, c), _slice(g, v_t, c), _slice(g, kq, c)
        ch_q_g_exp, ch_kg_t = _slice(g, q_g_exp, c), _slice(g, kg_t, c)
        v_t_new = g.unary("SUB", ch_v_t, g.mul_mat(ch_k_cd, s_t))
        v_attn = g.mul_mat(v_t_new, ch_kq)
        o_ch = g.add(g.mul_mat(s_t, ch_q_g_exp), v_attn)
        setv = g._view(v, v.ne, v.nb, 0, "SET")                     # ggml_set_inplace: a view of v
        setv.src = (v, o_ch)
        v = setv
        kgv = g.mul_mat(ch_kg_t, v_t_new)
        s_t = g.add(g.mul(s_t, _slice(g, g_last_exp_t, c)), kgv)
    s_t = g.reshape(s_t, s_v, s_v, h_v, n_seqs)
    o = g.view(v, (s_v, n_tokens, h_v, n_seqs), (row_size(v.type, s_v), row_size(v.type, s_v * CHUNK * n_chunks),
                                                  row_size(v.type, s_v * CHUNK * n_chunks * h_v)), 0)
    return g.permute(o, 0, 2, 1, 3), g.transpose(s_t)


def autoregressive(b: DecoderGraph, q: Tensor, k: Tensor, v: Tensor, gate: Tensor, beta: Tensor, s: Tensor
                   ) -> tuple[Tensor, Tensor]:
    """build_delta_net_autoregressive (one token per sequence) → (output [S_v, H_v, 1, n_seqs], new state)."""
    g = b.g
    h_v, n_seqs = v.ne[1], q.ne[3]
    q = g.unary("SCALE", q)
    q, k, v = (g.permute(x, 0, 2, 1, 3) for x in (q, k, v))
    gate = g.reshape(gate, 1, gate.ne[0], h_v, n_seqs)
    beta = g.reshape(beta, 1, 1, h_v, n_seqs)
    s = g.mul(s, g.unary("UNARY", gate))                           # s × exp(g)
    s_t = g.cont(g.transpose(s))
    sk = g.sum_rows(g.mul(s_t, k))
    d = g.mul(g.unary("SUB", v, g.transpose(sk)), beta)
    kd = g.mul(g.new(k.type, s.ne, "REPEAT", (k,)), g.transpose(d))   # ggml_repeat(k, s)
    s_t = g.add(s_t, kd)
    o = g.sum_rows(g.mul(s_t, q))
    return g.permute(o, 2, 0, 1, 3), g.transpose(s_t)
