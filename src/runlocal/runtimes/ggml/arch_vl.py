"""llama.cpp's graphs for the Qwen vision-language decoders' text side: Qwen2-VL (``qwen2vl``), Qwen3-VL
(``qwen3vl``) and Qwen3-VL-MoE (``qwen3vlmoe``).

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/qwen2vl.cpp llama_model_qwen2vl::graph::graph: llama's pre-norm block with Q/K/V biases and
  multi-section RoPE (ggml_rope_multi), whose positions input holds 4 per token (llama-hparams.cpp n_pos_per_embd:
  GGML_MROPE_SECTIONS for M-RoPE / interleaved M-RoPE);
- src/models/qwen3vl.cpp, qwen3vlmoe.cpp: the same with Q/K norms (qwen3's), the MoE's softmax router with
  normalized weights, and DeepStack: the embeddings input is n_embd × (1 + n_deepstack_layers) wide
  (llama-hparams.cpp n_embd_inp), the token path's rows are padded to that width (build_inp_embd's ggml_pad) and
  viewed back to n_embd, and the first n_deepstack_layers layers add the next n_embd slice of that input to their
  output;
- src/llama-graph.cpp build_inp_embd, build_qkv, build_attn, build_ffn, build_moe_ffn (arch.DecoderGraph).
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .blocks import dense_ffn, pre_norm_layer, qkv
from .types import Tensor

if TYPE_CHECKING:    # arch.py registers these builders (and imports this module)
    from .arch import DecoderGraph

# GGML_MROPE_SECTIONS (ggml.h): positions per token of an M-RoPE model
MROPE_SECTIONS = 4
# qwen3vl.n_deepstack_layers: convert_hf_to_gguf.py writes len(vision_config.deepstack_visual_indexes), three in
# every Qwen3-VL release (2B to 235B-A22B: [8, 16, 24] or the like); the planner's GGUF view keeps no vision tensor
# to count them from (evidence/converter_meta.py takes the same default)
DEEPSTACK_LAYERS = 3


def inp_embd_deepstack(b: DecoderGraph, n_deepstack: int) -> Tensor:
    """build_inp_embd with n_embd_inp = n_embd × (1 + n_deepstack): the token rows padded to the input's width,
    both paths entering the graph (ggml_build_forward_select), the result a view of the first n_embd columns."""
    g, n_tokens = b.g, b.n_tokens
    width = b.n_embd * (1 + n_deepstack)
    tokens = b.inp("i32", (n_tokens,), "inp_tokens")
    embd_in = b.inp("f32", (width, n_tokens), "inp_embd")
    cur = g.get_rows(b.w("token_embd.weight"), tokens, name="embd")  # type: ignore[arg-type]
    if n_deepstack:
        cur = g.new(cur.type, (width, n_tokens), "PAD", (cur,))
    g.expand(cur)
    g.expand(embd_in)
    if n_deepstack:
        cur = g.view(cur, (b.n_embd, n_tokens), (cur.nb[1],), 0)
    g.expand(cur)
    return cur


def build_qwen_vl(b: DecoderGraph) -> None:
    """llama_model_qwen2vl / qwen3vl / qwen3vlmoe ::graph::graph."""
    g, m = b.g, b.m
    n_deepstack = DEEPSTACK_LAYERS if m.family in ("qwen3vl", "qwen3vlmoe") else 0
    inpL = inp_embd_deepstack(b, n_deepstack)
    t_inp_embd = inpL
    pos = b.inp("i32", (b.n_tokens * MROPE_SECTIONS,), "inp_pos")
    inp = b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        def attn(cur: Tensor, il: int) -> Tensor:
            a = m.layers[il].attention
            q, k, v = qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
            qn, kn = b.lw(il, "attn_q_norm.weight"), b.lw(il, "attn_k_norm.weight")
            q = g.rope(b.norm(q, qn, il=il) if qn is not None else q, pos)
            k = g.rope(b.norm(k, kn, il=il) if kn is not None else k, pos)
            return b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"))

        def ffn(cur: Tensor, il: int) -> Tensor:
            if b.lw(il, "ffn_gate_inp.weight") is not None:
                return b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True)
            return dense_ffn(b, cur, il)

        inpL = pre_norm_layer(b, il, inpL, out_ids, attn, ffn)
        if il < n_deepstack:
            ds = g.view(t_inp_embd, (b.n_embd, b.n_tokens), (t_inp_embd.nb[1],), (il + 1) * b.n_embd * 4)
            inpL = g.add(inpL, ds)
    b.output(inpL)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = dict.fromkeys(("qwen2vl", "qwen3vl", "qwen3vlmoe"),
                                                                    build_qwen_vl)
