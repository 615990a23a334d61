"""llama.cpp's graphs for MoE families beyond the llama-like ones: GLM-4.5 / 4.6 (``glm4moe``), MiniMax M2
(``minimax-m2``), DBRX (``dbrx``), Qwen1.5 / Qwen2 MoE (``qwen2moe``).

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/glm4-moe.cpp llama_model_glm4_moe::graph::graph: pre-norm attention (Q/K/V biases, optional Q/K
  norms, RoPE), the post-attention norm, dense FFNs for the n_layer_dense_lead first layers and sigmoid-routed
  experts with the selection bias ffn_exp_probs_b plus a shared expert after them;
- src/models/minimax-m2.cpp llama_model_minimax_m2::graph::graph: Q and K normed over all their heads at once
  (build_qkv without the reshape, then build_norm, then the reshape to heads), partial RoPE, and sigmoid-routed
  experts with the selection bias, no shared expert;
- src/models/dbrx.cpp llama_model_dbrx::graph::graph: layer norms (no bias), the fused QKV projection clamped to
  ±f_clamp_kqv (build_qkv), RoPE, and softmax-routed experts after attn_output_norm;
- src/models/qwen2moe.cpp: llama's attention with Q/K/V biases, softmax-routed experts (weights not normalized)
  plus a shared expert scaled by its sigmoid gate, computed as silu(x) / x;
- src/llama-graph.cpp build_qkv, build_attn, build_ffn, build_moe_ffn (arch.DecoderGraph).
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .blocks import attention, dense_ffn, gguf_type, inputs, pre_norm_layer, qk_norms, qkv
from .types import Tensor, row_size

if TYPE_CHECKING:    # arch.py registers these builders (and imports this module)
    from .arch import DecoderGraph


def build_glm4moe(b: DecoderGraph) -> None:
    """llama_model_glm4_moe::graph::graph (text-only RoPE; no NextN rows: cparams.embeddings_nextn is off)."""
    g, m = b.g, b.m
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        def attn(cur: Tensor, il: int) -> Tensor:
            a = m.layers[il].attention
            q, k, v = qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
            q, k = qk_norms(b, il, q, k)
            q, k = g.rope(q, pos, None), g.rope(k, pos, None)
            return b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), None)

        def ffn(cur: Tensor, il: int) -> Tensor:
            if b.lw(il, "ffn_gate_inp.weight") is None:       # il < n_layer_dense_lead
                return dense_ffn(b, cur, il)
            routed = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True, gating="sigmoid",
                           exp_probs_b=b.lw(il, "exp_probs_b.bias"))
            return g.add(routed, dense_ffn(b, cur, il, "_shexp"))

        inpL = pre_norm_layer(b, il, inpL, out_ids, attn, ffn, ffn_norm="post_attention_norm")
    b.output(inpL)


def build_minimax_m2(b: DecoderGraph) -> None:
    """llama_model_minimax_m2::graph::graph."""
    m = b.m
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        inpL = pre_norm_layer(
            b, il, inpL, out_ids, lambda cur, il: attention(b, inp, il, cur, pos, flat_qk_norm=True),
            lambda cur, il: b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True, gating="sigmoid",
                                     exp_probs_b=b.lw(il, "exp_probs_b.bias")))
    b.output(inpL)


def _experts_3d(b: DecoderGraph, il: int) -> None:
    """A DBRX checkpoint stores each expert stack as one [n_expert × n_ff, n_embd] matrix; convert_hf_to_gguf.py
    (DbrxModel.modify_tensors) writes it as {n_embd, n_ff, n_expert} (down: {n_ff, n_embd, n_expert}), the shape
    build_moe_ffn's mul_mat_id reads. Registers the GGUF's shapes where the spec has the checkpoint's."""
    n_exp, n_embd = b.m.n_experts, b.n_embd
    for kind in ("gate", "up", "down"):
        name = f"blk.{il}.ffn_{kind}_exps.weight"
        info = b.by_name.get(name)
        if info is None or len(info.shape) != 2 or name in b._weights:
            continue
        n_ff = info.numel // (n_exp * n_embd)
        ne = (n_ff, n_embd, n_exp) if kind == "down" else (n_embd, n_ff, n_exp)
        b._weights[name] = b.g.weight(gguf_type(info.dtype), ne, name, il, is_weight=True)


def build_dbrx(b: DecoderGraph) -> None:
    """llama_model_dbrx::graph::graph."""
    g, m = b.g, b.m
    inpL, pos, inp, out_ids = inputs(b)
    n_tokens = b.n_tokens
    for il in b.layer_ids():
        _experts_3d(b, il)

        def attn(cur: Tensor, il: int) -> Tensor:
            a = m.layers[il].attention
            qkv = g.unary("CLAMP", g.mul_mat(b.lw(il, "attn_qkv.weight"), cur))  # type: ignore[arg-type]
            hd, eq, ek = a.k_dim, a.k_dim * b.n_head, a.k_dim * a.n_kv_heads
            q = g.view(qkv, (hd, b.n_head, n_tokens), (row_size(qkv.type, hd), qkv.nb[1]), 0)
            k = g.view(qkv, (hd, a.n_kv_heads, n_tokens), (row_size(qkv.type, hd), qkv.nb[1]), row_size(qkv.type, eq))
            v = g.view(qkv, (a.v_dim, a.n_kv_heads, n_tokens), (row_size(qkv.type, a.v_dim), qkv.nb[1]),
                       row_size(qkv.type, eq + ek))
            q, k = g.rope(q, pos, None), g.rope(k, pos, None)
            return b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), None)

        inpL = pre_norm_layer(b, il, inpL, out_ids, attn,
                              lambda cur, il: b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True),
                              rms=False, ffn_norm="attn_output_norm")
    b.output(inpL, rms=False)


def build_qwen2moe(b: DecoderGraph) -> None:
    """llama_model_qwen2moe::graph::graph."""
    g, m = b.g, b.m
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        def ffn(cur: Tensor, il: int) -> Tensor:
            moe_out = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=False)
            gate_inp = g.mul_mat(b.lw(il, "ffn_gate_inp_shexp.weight"), cur)  # type: ignore[arg-type]
            gate = g.new(gate_inp.type, gate_inp.ne, "DIV", (g.unary("UNARY", gate_inp), gate_inp))
            return g.add(moe_out, g.mul(dense_ffn(b, cur, il, "_shexp"), gate))

        inpL = pre_norm_layer(b, il, inpL, out_ids,
                              lambda cur, il: attention(b, inp, il, cur, pos, out_bias=True), ffn)
    b.output(inpL)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {"glm4moe": build_glm4moe, "minimax-m2": build_minimax_m2,
                                                       "dbrx": build_dbrx, "qwen2moe": build_qwen2moe}
