"""Sub-graphs several of llama.cpp's architecture builders share (arch.py, arch_ssm.py, arch_moe.py, arch_dense.py,
arch_hybrid.py): src/llama-graph.cpp build_qkv (and the layer-norm models' attn_norm → build_qkv opening, the
per-head Q/K norms), build_ffn (the SwiGLU FFN and its shared expert), the last layer's
gather of the output rows, src/models/mamba-base.cpp build_mamba2_layer, and the weight type a GGUF dtype becomes.
Pure computation, no I/O."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .graph import conv_channels
from .recurrent import build_rs
from .types import TYPES, Tensor, row_size

if TYPE_CHECKING:
    from .arch import DecoderGraph


def gguf_type(dtype: str | None) -> str:
    t = (dtype or "f32").lower()
    return t if t in TYPES else "q4_0"


def qkv(b: DecoderGraph, il: int, cur: Tensor, n_head: int, n_head_kv: int, hd_k: int, hd_v: int
         ) -> tuple[Tensor, Tensor, Tensor]:
    """llama-graph.cpp build_qkv: separate projections (+ biases) reshaped to heads, or views of a fused QKV."""
    g = b.g
    n_tokens = cur.ne[1]
    wqkv = b.lw(il, "attn_qkv.weight")
    if wqkv is not None:
        qkv = g.mul_mat(wqkv, cur)
        bias = b.lw(il, "attn_qkv.bias")
        if bias is not None:
            qkv = g.add(qkv, bias)
        eq, ek = hd_k * n_head, hd_k * n_head_kv
        q = g.view(qkv, (hd_k, n_head, n_tokens), (row_size(qkv.type, hd_k), qkv.nb[1]), 0)
        k = g.view(qkv, (hd_k, n_head_kv, n_tokens), (row_size(qkv.type, hd_k), qkv.nb[1]), row_size(qkv.type, eq))
        v = g.view(qkv, (hd_v, n_head_kv, n_tokens), (row_size(qkv.type, hd_v), qkv.nb[1]), row_size(qkv.type, eq + ek))
        return q, k, v
    out = []
    for name in ("q", "k", "v"):
        t = g.mul_mat(b.lw(il, f"attn_{name}.weight"), cur, name=f"{name.upper()}cur-{il}")  # type: ignore[arg-type]
        bias = b.lw(il, f"attn_{name}.bias")
        if bias is not None:
            t = g.add(t, bias)
        out.append(t)
    q, k, v = out
    return (g.reshape(q, hd_k, n_head, n_tokens), g.reshape(k, hd_k, n_head_kv, n_tokens),
            g.reshape(v, hd_v, n_head_kv, n_tokens))


def norm_qkv(b: DecoderGraph, il: int, x: Tensor, bias: bool = True) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The opening of the layer-norm models' layers (src/models/phi2.cpp, gptneox.cpp, stablelm.cpp, command-r.cpp,
    cohere2.cpp): attn_norm as a layer norm (its bias where ``bias``; Cohere's has none) and build_qkv on it.
    Returns (normed, q, k, v)."""
    a = b.m.layers[il].attention
    normed = b.norm(x, b.lw(il, "attn_norm.weight"), b.lw(il, "attn_norm.bias") if bias else None, rms=False, il=il)
    q, k, v = qkv(b, il, normed, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
    return normed, q, k, v


def qk_norms(b: DecoderGraph, il: int, q: Tensor, k: Tensor, rms: bool = True) -> tuple[Tensor, Tensor]:
    """The per-head Q and K norms where the GGUF has them (attn_q_norm, attn_k_norm), Q's first, both before RoPE
    (command-r.cpp, stablelm.cpp: layer norms; glm4-moe.cpp: RMS norms)."""
    qn, kn = b.lw(il, "attn_q_norm.weight"), b.lw(il, "attn_k_norm.weight")
    q = b.norm(q, qn, rms=rms, il=il) if qn is not None else q
    k = b.norm(k, kn, rms=rms, il=il) if kn is not None else k
    return q, k


def mamba2(b: DecoderGraph, rs: dict, cur: Tensor, il: int) -> Tensor:
    """src/models/mamba-base.cpp build_mamba2_layer (cparams.n_rs_seq 0: one state slot per sequence)."""
    g = b.g
    n_seqs = b.n_seqs
    n_seq_tokens = cur.ne[1] // n_seqs
    conv_w = b.lw(il, "ssm_conv1d.weight")
    in_w = b.lw(il, "ssm_in.weight")
    assert conv_w is not None and in_w is not None
    d_conv, conv_dim = conv_w.ne[0], conv_channels(conv_w)
    n_head = b.lw(il, "ssm_dt.bias").ne[0]  # type: ignore[union-attr]
    d_inner = b.lw(il, "ssm_out.weight").ne[0]  # type: ignore[union-attr]
    head_dim = d_inner // n_head
    d_in_proj = in_w.ne[1]
    ng_ds = (conv_dim - d_inner) // 2                    # n_group * d_state
    rec = b.m.layers[il].recurrent
    n_embd_r, n_embd_s = rec.conv_elems, rec.state_elems
    d_state = n_embd_s // d_inner
    n_group = ng_ds // d_state
    mem = max(1, n_seqs)
    r_all = g.weight("f32", (n_embd_r, mem), f"cache_r_l{il}", il)
    s_all = g.weight("f32", (n_embd_s, mem), f"cache_s_l{il}", il)
    conv = build_rs(b, rs, r_all, n_embd_r)
    conv = g.reshape(conv, d_conv - 1, conv_dim, n_seqs)
    zx = g.mul_mat(in_w, cur)
    zx = g.reshape(zx, d_in_proj, n_seq_tokens, n_seqs)
    f = 4
    z = g.view(zx, (head_dim, n_head, n_seq_tokens, n_seqs), (head_dim * f, zx.nb[1], zx.nb[2]), 0)
    xBC = g.view(zx, (conv_dim, n_seq_tokens, n_seqs), (zx.nb[1], zx.nb[2]), d_inner * f)
    dt = g.view(zx, (n_head, n_seq_tokens, n_seqs), (zx.nb[1], zx.nb[2]), (2 * d_inner + 2 * ng_ds) * f)
    conv_x = g.concat(conv, g.transpose(xBC), 0)
    row_count = (d_conv - 1) * conv_dim
    last = g.view(conv_x, (d_conv - 1, conv_dim, n_seqs), (conv_x.nb[1], conv_x.nb[2]), n_seq_tokens * conv_x.nb[0])
    g.expand(g.cpy(last, g.view(r_all, (row_count, n_seqs), (r_all.nb[1],), 0)))
    xBC = g.ssm_conv(conv_x, conv_w)
    xBC = g.add(xBC, b.lw(il, "ssm_conv1d.bias"))  # type: ignore[arg-type]
    xBC = g.unary("UNARY", xBC)
    x = g.view(xBC, (head_dim, n_head, n_seq_tokens, n_seqs), (head_dim * f, xBC.nb[1], xBC.nb[2]), 0)
    B = g.view(xBC, (d_state, n_group, n_seq_tokens, n_seqs), (d_state * f, xBC.nb[1], xBC.nb[2]), d_inner * f)
    C = g.view(xBC, (d_state, n_group, n_seq_tokens, n_seqs), (d_state * f, xBC.nb[1], xBC.nb[2]),
               (d_inner + n_group * d_state) * f)
    dt = g.add(g.cont(dt), b.lw(il, "ssm_dt.bias"))  # type: ignore[arg-type]
    A = b.lw(il, "ssm_a")
    assert A is not None

    def ssm_rows(states: Tensor, ids: Tensor) -> Tensor:
        ssm = g.reshape(states, d_state, head_dim, n_head, mem)
        return g.ssm_scan(ssm, x, dt, A, B, C, ids)

    y_ssm = build_rs(b, rs, s_all, n_embd_s, ssm_rows)
    D = d_state * d_inner
    yrow = row_size("f32", D)
    g.expand(g.cpy(g.view(y_ssm, (D, n_seqs, 1), (yrow, yrow * n_seqs), x.nelements() * f),
                   g.view(s_all, (D, n_seqs, 1), (s_all.nb[1], mem * s_all.nb[1]), 0)))
    y = g.view(y_ssm, (head_dim, n_head, n_seq_tokens, n_seqs),
               (x.nb[1], n_head * x.nb[1], n_seq_tokens * n_head * x.nb[1]), 0)
    y = g.add(y, g.mul(x, b.lw(il, "ssm_d")))  # type: ignore[arg-type]
    y = g.glu_split(g.cont(z), y)
    norm_w = b.lw(il, "ssm_norm.weight")
    if norm_w is not None:
        y = g.reshape(y, d_inner // n_group, n_group, n_seq_tokens, n_seqs)
        y = b.norm(y, norm_w, il=il)
    y = g.reshape(y, d_inner, n_seq_tokens * n_seqs)
    return g.mul_mat(b.lw(il, "ssm_out.weight"), y)  # type: ignore[arg-type]


def dense_ffn(b: DecoderGraph, cur: Tensor, il: int, kind: str = "") -> Tensor:
    """llama-graph.cpp build_ffn(up, gate, down, LLM_FFN_SILU, LLM_FFN_PAR): the layer's dense FFN, or with kind
    "_shexp" its shared expert."""
    return b.ffn(cur, b.lw(il, f"ffn_up{kind}.weight"), b.lw(il, f"ffn_gate{kind}.weight"),
                 b.lw(il, f"ffn_down{kind}.weight"))  # type: ignore[arg-type]


def last_rows(b: DecoderGraph, il: int, out_ids: Tensor, cur: Tensor, residual: Tensor) -> tuple[Tensor, Tensor]:
    """The models' ``if (il == n_layer - 1 && inp_out_ids)``: the last layer keeps only the output rows, of its
    output first, then of its residual."""
    if il != b.m.n_layers - 1:
        return cur, residual
    return b.g.get_rows(cur, out_ids), b.g.get_rows(residual, out_ids)


def pre_norm_layer(b: DecoderGraph, il: int, inpL: Tensor, out_ids: Tensor, attn: Callable[[Tensor, int], Tensor],
                   ffn: Callable[[Tensor, int], Tensor], rms: bool = True, ffn_norm: str = "ffn_norm",
                   residual_first: bool = False) -> Tensor:
    """The pre-norm decoder layer most src/models/*.cpp write out: attn_norm (weight and bias where the GGUF has
    them), the attention block ``attn(normed, il)``, the last layer's output rows, the residual, ``ffn_norm`` (the
    MoE models' names differ: DBRX's attn_output_norm, GLM-4.5's post_attention_norm), the FFN block
    ``ffn(normed, il)``, its residual (``residual_first``: Phi-3's ggml_add(ffn_inp, cur)). ``rms`` False: layer
    norms (OLMo, DBRX). Returns the layer's output."""
    g = b.g
    cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), b.lw(il, "attn_norm.bias"), rms=rms, il=il)
    cur, inpSA = last_rows(b, il, out_ids, attn(cur, il), inpL)
    ffn_inp = g.add(cur, inpSA)
    cur = ffn(b.norm(ffn_inp, b.lw(il, f"{ffn_norm}.weight"), b.lw(il, f"{ffn_norm}.bias"), rms=rms, il=il), il)
    return g.add(ffn_inp, cur) if residual_first else g.add(cur, ffn_inp)


def qkv_flat_norm(b: DecoderGraph, il: int, cur: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """build_qkv(..., reshape = false) as OLMo 2 and MiniMax M2 call it: the three projections stay [heads × head
    size, n_tokens], Q and K are RMS-normed over all their heads at once, then all three are reshaped to heads."""
    g, a, n_tokens = b.g, b.m.layers[il].attention, b.n_tokens
    q, k, v = (g.mul_mat(b.lw(il, f"attn_{n}.weight"), cur, name=f"{n.upper()}cur-{il}")  # type: ignore[arg-type]
               for n in ("q", "k", "v"))
    q = g.reshape(b.norm(q, b.lw(il, "attn_q_norm.weight"), il=il), a.k_dim, b.n_head, n_tokens)
    k = g.reshape(b.norm(k, b.lw(il, "attn_k_norm.weight"), il=il), a.k_dim, a.n_kv_heads, n_tokens)
    return q, k, g.reshape(v, a.v_dim, a.n_kv_heads, n_tokens)


def attention(b: DecoderGraph, inp: dict, il: int, cur: Tensor, pos: Tensor | None,
              out_bias: bool = False, flat_qk_norm: bool = False) -> Tensor:
    """The plain attention block: build_qkv (or qkv_flat_norm), RoPE on Q and K where ``pos`` is given (no
    factors), build_attn with attn_output (and its bias where ``out_bias``)."""
    g, a = b.g, b.m.layers[il].attention
    if flat_qk_norm:
        q, k, v = qkv_flat_norm(b, il, cur)
    else:
        q, k, v = qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
    if pos is not None:
        q, k = g.rope(q, pos, None), g.rope(k, pos, None)
    return b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"),
                  b.lw(il, "attn_output.bias") if out_bias else None)


def inputs(b: DecoderGraph) -> tuple[Tensor, Tensor, dict, Tensor]:
    """A decoder's graph inputs in llama.cpp's order: build_inp_embd, build_inp_pos, build_attn_inp_kv,
    build_inp_out_ids."""
    return b.build_inp_embd(), b.build_inp_pos(), b.kv_inputs(), b.build_inp_out_ids()
