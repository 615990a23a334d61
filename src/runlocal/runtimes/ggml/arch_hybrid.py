"""llama.cpp's graphs for the gated delta-net hybrids: Qwen3-Next (``qwen3next``) and Qwen3.5 / 3.6 dense and MoE
(``qwen35``, ``qwen35moe``). Three linear-attention layers (a gated delta net over a recurrent state) to one
full-attention layer, each followed by a dense or MoE FFN.

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/qwen35.cpp, qwen35moe.cpp, qwen3next.cpp: llama_model_<arch>::graph::graph, build_layer_attn,
  build_layer_attn_linear, build_qkvz, build_norm_gated, build_layer_ffn;
- src/models/delta-net-base.cpp: llm_build_delta_net_base::build_conv_state, build_recurrent_attn and
  build_delta_net_fused (cparams.fused_gdn_ar / fused_gdn_ch are set true in src/llama-context.cpp and, in this
  build, not probed: the CPU and CUDA backends run GGML_OP_GATED_DELTA_NET; cparams.n_rs_seq 0);
- src/llama-graph.cpp: build_inp_mem_hybrid (the recurrent-state copy input, then the KV inputs), build_rs
  (recurrent.build_rs), build_attn, build_moe_ffn, build_ffn (arch.DecoderGraph);
- ggml/src/ggml.c: ggml_gated_delta_net (one f32 result: the outputs, then the final states), ggml_ssm_conv,
  ggml_concat.
Checked against real llama.cpp logs: measurements/llamacpp_qwen35 (tests/accuracy/test_ggml_qwen35_real.py).
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import delta_net_unfused
from .blocks import dense_ffn
from .graph import conv_channels
from .recurrent import build_rs
from .types import Tensor, row_size

if TYPE_CHECKING:    # arch.py registers these builders (and imports this module)
    from .arch import DecoderGraph

F32 = 4


def _inputs(b: DecoderGraph, n_pos_per_embd: int) -> tuple[Tensor, dict, dict, Tensor, Tensor]:
    """graph::graph's inputs in its order: build_inp_embd, build_inp_mem_hybrid (build_rs_inp_impl, then
    build_attn_inp_kv_impl), build_inp_pos (n_tokens × n_pos_per_embd positions: 4 for the M-RoPE of qwen35 /
    qwen35moe, llama_hparams::n_pos_per_embd), build_inp_out_ids."""
    g = b.g
    inpL = b.build_inp_embd()
    mem = max(1, b.n_seqs)
    s_copy = b.inp("i32", (mem,), "rs_s_copy")
    rs = {"main": g.view(s_copy, (b.n_seqs,), (), 0),
          "extra": g.view(s_copy, (mem - b.n_seqs,), (), b.n_seqs * s_copy.nb[0])}
    kv = b.kv_inputs()
    pos = b.inp("i32", (b.n_tokens * n_pos_per_embd,), "inp_pos")
    out_ids = b.build_inp_out_ids()
    return inpL, rs, kv, pos, out_ids


def _delta_net_dims(b: DecoderGraph, il: int) -> dict[str, int]:
    """The hparams build_layer_attn_linear reads, from the layer's tensors: ssm_dt_rank (value heads) from
    ssm_dt.bias, ssm_d_inner from ssm_out's input width, ssm_d_state (key head size) from the recurrent state
    (n_embd_s = d_state × d_inner), the conv channels d_inner + 2 × n_group × d_state and the kernel size from
    ssm_conv1d (a kernel viewed as (C, 1, K) or written as (C, K))."""
    rec = b.m.layers[il].recurrent
    n_v = b.lw(il, "ssm_dt.bias").ne[0]                 # type: ignore[union-attr]
    d_inner = b.lw(il, "ssm_out.weight").ne[0]          # type: ignore[union-attr]
    d_state = rec.state_elems // d_inner
    conv = b.lw(il, "ssm_conv1d.weight")
    assert conv is not None
    d_conv = conv.ne[0]
    channels = conv_channels(conv)
    return {"n_v": n_v, "d_inner": d_inner, "d_state": d_state, "hv": d_inner // n_v, "d_conv": d_conv,
            "channels": channels, "n_k": (channels - d_inner) // (2 * d_state),
            "n_embd_r": rec.conv_elems, "n_embd_s": rec.state_elems}


def _conv_state(b: DecoderGraph, rs: dict, il: int, qkv_mixed: Tensor, d: dict[str, int]) -> Tensor:
    """delta-net-base.cpp build_conv_state (n_rs_seq 0): the cached conv window before the new tokens, the last
    d_conv - 1 columns written back."""
    g = b.g
    n_seqs = b.n_seqs
    mem = max(1, n_seqs)
    r_all = g.weight("f32", (d["n_embd_r"], mem), f"cache_r_l{il}", il)
    conv_states = build_rs(b, rs, r_all, d["n_embd_r"])
    conv_states = g.reshape(conv_states, d["d_conv"] - 1, d["channels"], n_seqs)
    qkv_t = g.transpose(qkv_mixed)
    conv_input = g.concat(conv_states, qkv_t, 0)
    row_count = (d["d_conv"] - 1) * d["channels"]
    s_idx = conv_input.ne[0] - conv_states.ne[0]
    last = g.view(conv_input, (d["d_conv"] - 1, d["channels"], n_seqs), (conv_input.nb[1], conv_input.nb[2]),
                  row_size(conv_input.type, s_idx))
    update = g.view(r_all, (row_count, n_seqs), (r_all.nb[1],), 0)
    g.expand(g.cpy(last, update))
    return conv_input


def _gated_delta_net(b: DecoderGraph, rs: dict, il: int, qkv_mixed: Tensor, z: Tensor, gate: Tensor,
                     beta: Tensor, d: dict[str, int], repeat_kq: bool) -> Tensor:
    """The rest of build_layer_attn_linear (qwen35.cpp, qwen35moe.cpp, qwen3next.cpp, identical from here): the
    convolution over the cached window, the Q/K/V views of its output, L2-normed Q and K, the fused gated delta
    net over the recurrent state (build_recurrent_attn → build_delta_net_fused), the gated RMS norm and ssm_out.
    ``repeat_kq``: qwen3next repeats Q and K to the value heads before the op (the op broadcasts them otherwise)."""
    g = b.g
    n_seqs = b.n_seqs
    nst = qkv_mixed.ne[1]
    n_v, n_k, hv, hk = d["n_v"], d["n_k"], d["hv"], d["d_state"]
    mem = max(1, n_seqs)
    conv_input = _conv_state(b, rs, il, qkv_mixed, d)
    s_all = g.weight("f32", (d["n_embd_s"], mem), f"cache_s_l{il}", il)
    state = build_rs(b, rs, s_all, d["n_embd_s"])
    state = g.reshape(state, hv, hv, n_v, n_seqs)
    conv_w = b.lw(il, "ssm_conv1d.weight")
    assert conv_w is not None
    # ggml_ssm_conv: [channels, n_t, n_s] with n_t = sx->ne[0] - d_conv + 1
    conv = g.new("f32", (d["channels"], conv_input.ne[0] - d["d_conv"] + 1, conv_input.ne[2]), "SSM_CONV",
                 (conv_input, conv_w))
    conv = g.unary("UNARY", conv)                      # silu
    nb1 = row_size(conv.type, 2 * hk * n_k + hv * n_v)
    q = g.view(conv, (hk, n_k, nst, n_seqs), (row_size(conv.type, hk), nb1, nb1 * nst), 0)
    k = g.view(conv, (hk, n_k, nst, n_seqs), (row_size(conv.type, hk), nb1, nb1 * nst), hk * n_k * F32)
    v = g.view(conv, (hv, n_v, nst, n_seqs), (row_size(conv.type, hv), nb1, nb1 * nst),
               row_size(conv.type, 2 * hk * n_k))
    # ggml_l2_norm as the vendored build's graph runs it (GGML_SCHED_DEBUG=2 lists the nodes): RMS_NORM, then a
    # SCALE in place (q_conv_predelta / k_conv_predelta)
    old = b.p.gdn != "fused"
    if old:
        # ggml_l2_norm at b8250: one L2_NORM op each (a new tensor), and the explicit repeat of Q and K to the value
        # heads that the unfused graphs need (qwen35.cpp / qwen35moe.cpp build_layer_attn_linear)
        q = g.dup(q, "L2_NORM", (q,))
        k = g.dup(k, "L2_NORM", (k,))
        if not repeat_kq and n_k != n_v:
            q = g.new(q.type, (hk, n_v, nst, n_seqs), "REPEAT", (q,))
            k = g.new(k.type, (hk, n_v, nst, n_seqs), "REPEAT", (k,))
    else:
        q = g.unary("SCALE", g.rms_norm(q))
        k = g.unary("SCALE", g.rms_norm(k))
    if repeat_kq and n_k != n_v:
        # qwen3next.cpp: repeat interleave through a [hk, 1, n_k, ...] reshape
        rep = n_v // n_k
        q = g.reshape(g.new("f32", (hk, rep, n_k, nst * n_seqs), "REPEAT",
                            (g.reshape(q, hk, 1, n_k, nst * n_seqs),)), hk, n_v, nst, n_seqs)
        k = g.reshape(g.new("f32", (hk, rep, n_k, nst * n_seqs), "REPEAT",
                            (g.reshape(k, hk, 1, n_k, nst * n_seqs),)), hk, n_v, nst, n_seqs)
    if nst > 1 and b.p.gdn in ("unfused", "chunked"):
        out, new_state = delta_net_unfused.chunking(b, q, k, v, gate, beta, state)
    elif nst == 1 and b.p.gdn in ("unfused", "ar-unfused"):
        out, new_state = delta_net_unfused.autoregressive(b, q, k, v, gate, beta, state)
    else:
        out, new_state = _fused(g, q, k, v, gate, beta, state, hv, n_v, nst, n_seqs)
    # build_recurrent_attn (n_rs_seq 0): the new state copied into the cache at kv_head 0
    g.expand(g.cpy(new_state, g.view(s_all, (d["n_embd_s"], n_seqs), (s_all.nb[1],), 0)))
    z4 = g.reshape(z, hv, n_v, nst, n_seqs)
    # build_norm_gated: rms_norm(output) × ssm_norm, times silu(z)
    normed = b.norm(out, b.lw(il, "ssm_norm.weight"), il=il)
    cur = g.mul(normed, g.unary("UNARY", z4))
    cur = g.reshape(cur, hv * n_v, nst, n_seqs)
    cur = g.mul_mat(b.lw(il, "ssm_out.weight"), cur)  # type: ignore[arg-type]
    return g.reshape(cur, b.n_embd, nst * n_seqs)


def _fused(g, q: Tensor, k: Tensor, v: Tensor, gate: Tensor, beta: Tensor, state: Tensor, hv: int, n_v: int,
           nst: int, n_seqs: int) -> tuple[Tensor, Tensor]:
    """build_delta_net_fused: ggml_gated_delta_net(q, k, v, g, beta, s, K = 1) → [S_v × H, n_tokens × n_seqs +
    S_v × n_seqs]: the outputs, then the new states (views of the one result)."""
    res = g.new("f32", (hv * n_v, nst * n_seqs + hv * n_seqs), "GATED_DELTA_NET", (q, k, v, gate, beta, state))
    out = g.view(res, (hv, n_v, nst, n_seqs), (row_size(res.type, hv), row_size(res.type, hv * n_v),
                                                row_size(res.type, hv * n_v * nst)), 0)
    new_state = g.view(res, (hv, hv, n_v, n_seqs), (row_size(res.type, hv), row_size(res.type, hv * hv),
                                                     row_size(res.type, hv * hv * n_v)),
                       row_size(res.type, hv * n_v * nst * n_seqs))
    return out, new_state


def _linear_attn_qwen35(b: DecoderGraph, rs: dict, cur: Tensor, il: int) -> Tensor:
    """qwen35.cpp / qwen35moe.cpp build_layer_attn_linear: build_qkvz (the fused QKV projection and the Z gate
    projection), beta = sigmoid(ssm_beta · x), gate = softplus(ssm_alpha · x + dt_bias) × ssm_a."""
    g = b.g
    d = _delta_net_dims(b, il)
    n_seqs = b.n_seqs
    nst = cur.ne[1] // n_seqs
    qkv = g.mul_mat(b.lw(il, "attn_qkv.weight"), cur)  # type: ignore[arg-type]
    qkv = g.reshape(qkv, qkv.ne[0], nst, n_seqs)
    z = g.mul_mat(b.lw(il, "attn_gate.weight"), cur)  # type: ignore[arg-type]
    beta = g.mul_mat(b.lw(il, "ssm_beta.weight"), cur)  # type: ignore[arg-type]
    beta = g.unary("UNARY", g.reshape(beta, 1, d["n_v"], nst, n_seqs))
    alpha = g.mul_mat(b.lw(il, "ssm_alpha.weight"), cur)  # type: ignore[arg-type]
    # ggml_cont_3d at b8250, a reshape in the modelled build
    alpha = g.cont(alpha, d["n_v"], nst, n_seqs) if b.p.gdn != "fused" else g.reshape(alpha, d["n_v"], nst, n_seqs)
    gate = g.unary("UNARY", g.add(alpha, b.lw(il, "ssm_dt.bias")))   # type: ignore[arg-type]  # softplus
    gate = g.mul(gate, b.lw(il, "ssm_a"))  # type: ignore[arg-type]
    gate = g.reshape(gate, 1, d["n_v"], nst, n_seqs)
    return _gated_delta_net(b, rs, il, qkv, z, gate, beta, d, repeat_kq=False)


def _linear_attn_qwen3next(b: DecoderGraph, rs: dict, cur: Tensor, il: int) -> Tensor:
    """qwen3next.cpp build_layer_attn_linear: build_qkvz (the fused QKV + Z projections, or the legacy ssm_in
    that packs Q, K, V and Z per key head, split by views and concatenated back), the packed beta/alpha
    projection ssm_ba split per key head; Q and K repeated to the value heads."""
    g = b.g
    d = _delta_net_dims(b, il)
    n_seqs = b.n_seqs
    nst = cur.ne[1] // n_seqs
    n_v, n_k, hk, hv = d["n_v"], d["n_k"], d["d_state"], d["hv"]
    wqkv = b.lw(il, "attn_qkv.weight")
    if wqkv is not None:
        qkv = g.reshape(g.mul_mat(wqkv, cur), wqkv.ne[1], nst, n_seqs)
        z = g.mul_mat(b.lw(il, "attn_gate.weight"), cur)  # type: ignore[arg-type]
    else:
        mixed = g.mul_mat(b.lw(il, "ssm_in.weight"), cur)  # type: ignore[arg-type]
        per = 2 * hk + 2 * hv * (n_v // n_k)
        mixed = g.reshape(mixed, per, n_k, nst, n_seqs)
        sizes = (hk, hk, hv * n_v // n_k, hv * n_v // n_k)
        parts, offs = [], 0
        for size in sizes:
            parts.append(g.view(mixed, (size, n_k, nst, n_seqs), (mixed.nb[1], mixed.nb[2], mixed.nb[3]), offs * F32))
            offs += size
        query, key, value, z = parts
        z = g.cont(z)
        query = g.cont(query, hk * n_k, nst, n_seqs)
        key = g.cont(key, hk * n_k, nst, n_seqs)
        value = g.cont(value, hv * n_v, nst, n_seqs)
        qkv = g.concat(g.concat(query, key, 0), value, 0)
    ba = g.mul_mat(b.lw(il, "ssm_ba.weight"), cur)  # type: ignore[arg-type]
    half = n_v // n_k
    ba = g.reshape(ba, 2 * half, n_k, nst, n_seqs)
    bv = g.view(ba, (half, n_k, nst, n_seqs), (ba.nb[1], ba.nb[2], ba.nb[3]), 0)
    av = g.view(ba, (half, n_k, nst, n_seqs), (ba.nb[1], ba.nb[2], ba.nb[3]), half * F32)
    beta = g.unary("UNARY", g.cont(bv))             # sigmoid
    alpha = g.cont(av, n_v, nst, n_seqs)
    gate = g.unary("UNARY", g.add(alpha, b.lw(il, "ssm_dt.bias")))   # type: ignore[arg-type]  # softplus
    gate = g.mul(gate, b.lw(il, "ssm_a"))  # type: ignore[arg-type]
    beta = g.reshape(beta, 1, n_v, nst, n_seqs)
    gate = g.reshape(gate, 1, n_v, nst, n_seqs)
    return _gated_delta_net(b, rs, il, qkv, z, gate, beta, d, repeat_kq=True)


def _full_attn(b: DecoderGraph, kv: dict, pos: Tensor, cur: Tensor, il: int, four_d: bool) -> Tensor:
    """build_layer_attn (qwen35.cpp, qwen35moe.cpp, qwen3next.cpp): one Q projection carrying query and gate
    (viewed apart), Q and K RMS-normed, RoPE (M-RoPE on Qwen3.5), attention over the KV cache, the output gated by
    sigmoid(gate) (its copy made contiguous after the attention: the first use that expands it)."""
    g = b.g
    a = b.m.layers[il].attention
    hd, n_head, n_tokens = a.k_dim, b.n_head, cur.ne[1]
    q_full = g.mul_mat(b.lw(il, "attn_q.weight"), cur)  # type: ignore[arg-type]
    k = g.mul_mat(b.lw(il, "attn_k.weight"), cur)  # type: ignore[arg-type]
    v = g.mul_mat(b.lw(il, "attn_v.weight"), cur)  # type: ignore[arg-type]
    es = F32
    if four_d:
        # qwen3next.cpp: Qcur_full reshaped to [2 × head, n_head, n_tokens, 1], query and gate 4-D views of it
        q_full = g.reshape(q_full, hd * 2, n_head, n_tokens, 1)
    q = g.view(q_full, (hd, n_head, n_tokens), (es * hd * 2, es * hd * 2 * n_head), 0)
    gate = g.view(q_full, (hd, n_head, n_tokens), (es * hd * 2, es * hd * 2 * n_head), es * hd)
    q = b.norm(q, b.lw(il, "attn_q_norm.weight"), il=il)
    k = b.norm(g.reshape(k, hd, a.n_kv_heads, n_tokens), b.lw(il, "attn_k_norm.weight"), il=il)
    v = g.reshape(v, hd, a.n_kv_heads, n_tokens)
    q = g.rope(q, pos)
    k = g.rope(k, pos)
    cur = b.attn(kv, il, q, k, v, None, None)
    gate = g.unary("UNARY", g.cont(gate, hd * n_head, n_tokens))      # sigmoid
    cur = g.mul(cur, gate)
    return g.mul_mat(b.lw(il, "attn_output.weight"), cur)  # type: ignore[arg-type]


def _ffn(b: DecoderGraph, cur: Tensor, il: int) -> Tensor:
    """build_layer_ffn: qwen35's dense SwiGLU FFN, or qwen35moe / qwen3next's softmax-routed experts (weights
    normalised, no scale) plus the shared expert times sigmoid(ffn_gate_inp_shexp · x)."""
    g, m = b.g, b.m
    if b.lw(il, "ffn_gate_inp.weight") is None:
        return dense_ffn(b, cur, il)
    moe_out = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True)
    if b.lw(il, "ffn_up_shexp.weight") is None:
        return moe_out
    shexp = dense_ffn(b, cur, il, "_shexp")
    shared_gate = g.unary("UNARY", g.mul_mat(b.lw(il, "ffn_gate_inp_shexp.weight"), cur))  # type: ignore[arg-type]
    return g.add(moe_out, g.mul(shexp, shared_gate))


def _build(b: DecoderGraph, linear: Callable[[DecoderGraph, dict, Tensor, int], Tensor], n_pos_per_embd: int) -> None:
    """graph::graph (qwen35.cpp, qwen35moe.cpp, qwen3next.cpp): pre-norm, linear or full attention, the residual,
    a post-attention norm, the FFN and its residual. cparams.embeddings_nextn_masked is false: the last layer keeps
    every row; the final norm is a graph output (res->t_h_nextn) and the output rows are picked after it."""
    g, m = b.g, b.m
    inpL, rs, kv, pos, out_ids = _inputs(b, n_pos_per_embd)
    old_tail = b.p.gdn != "fused"
    for il in b.layer_ids():
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        g.expand(cur)
        if m.layers[il].attention is None:
            cur = linear(b, rs, cur, il)
        else:
            cur = _full_attn(b, kv, pos, cur, il, four_d=linear is _linear_attn_qwen3next)
        if old_tail and il == m.n_layers - 1:
            # b8250 (and the modelled build's graph before its MTP head): the output rows are picked in the last layer
            cur = g.get_rows(cur, out_ids)
            inpSA = g.get_rows(inpSA, out_ids)
        cur = g.add(cur, inpSA)
        ffn_residual = cur
        cur = b.norm(cur, b.lw(il, "post_attention_norm.weight"), il=il)
        cur = _ffn(b, cur, il)
        inpL = g.add(cur, ffn_residual)
    # fused: the final norm is res->t_h_nextn, its rows res->t_embd
    b.output(inpL, out_ids=None if old_tail else out_ids)


def build_qwen35(b: DecoderGraph) -> None:
    """src/models/qwen35.cpp and qwen35moe.cpp (the same graph but the FFN): M-RoPE positions (4 per token)."""
    _build(b, _linear_attn_qwen35, 4)


def build_qwen3next(b: DecoderGraph) -> None:
    """src/models/qwen3next.cpp: plain RoPE, the packed beta/alpha projection, Q and K repeated to the value
    heads."""
    _build(b, _linear_attn_qwen3next, 1)


# (the projections these builders read, checked before a model is simulated: runtimes/ggml_scope.py
# delta_net_buildable)
BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {
    "qwen35": build_qwen35, "qwen35moe": build_qwen35, "qwen3next": build_qwen3next,
}
