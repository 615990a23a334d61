"""llama.cpp's graphs for decoders whose attention and FFN read the same normed input (parallel blocks): Command R
(``command-r``), Command R7B (``cohere2``), Phi-2 (``phi2``), GPT-NeoX (``gptneox``) and Falcon (``falcon``).

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/command-r.cpp / cohere2.cpp: a layer norm without bias feeds attention (command-r: per-head Q/K layer
  norms where present; cohere2: the iSWA cache pair and RoPE on the sliding layers only) and the SwiGLU FFN; both
  outputs added to the layer input; the logits scaled by f_logit_scale (every Cohere config sets logit_scale);
- src/models/phi2.cpp: layer norm with bias, Q scaled after RoPE, the GELU FFN (with biases) on the same normed
  input, the LM head's bias;
- src/models/gptneox.cpp: the fused QKV with bias; with use_par_res the FFN reads its own layer norm of the layer
  input (every GPT-NeoX of the catalog — Pythia — sets use_parallel_residual, which the spec does not carry);
- src/models/falcon.cpp: the fused QKV, attn_norm_2 for attention where present (40B / 180B), the GELU FFN on
  attn_norm;
- src/llama-graph.cpp build_qkv, build_attn, build_ffn (arch.DecoderGraph).
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .blocks import dense_ffn, inputs, norm_qkv, qk_norms, qkv
from .types import Tensor

if TYPE_CHECKING:    # arch.py registers these builders (and imports this module)
    from .arch import DecoderGraph


def _gelu_ffn(b: DecoderGraph, cur: Tensor, il: int) -> Tensor:
    """build_ffn(up (+b), down (+b), LLM_FFN_GELU, LLM_FFN_SEQ)."""
    return b.ffn(cur, b.lw(il, "ffn_up.weight"), None, b.lw(il, "ffn_down.weight"), par=False,  # type: ignore[arg-type]
                 act="gelu", up_b=b.lw(il, "ffn_up.bias"), down_b=b.lw(il, "ffn_down.bias"))


def _rows(b: DecoderGraph, il: int, out_ids: Tensor, *ts: Tensor) -> tuple[Tensor, ...]:
    """The last layer's ``ggml_get_rows(…, inp_out_ids)`` of each tensor, in the source's order."""
    return tuple(b.g.get_rows(t, out_ids) for t in ts) if il == b.m.n_layers - 1 else ts


def build_cohere(b: DecoderGraph) -> None:
    """llama_model_command_r / llama_model_cohere2 ::graph::graph."""
    g, m = b.g, b.m
    iswa = any(a.kind == "sliding" for a in m.attention_layers)
    inpL = b.build_inp_embd()
    pos = b.build_inp_pos()
    inp = b.kv_inputs_iswa() if iswa else b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        a = m.layers[il].attention
        ffn_inp, q, k, v = norm_qkv(b, il, inpL, bias=False)
        q, k = qk_norms(b, il, q, k, rms=False)
        if not iswa or a.kind == "sliding":
            factors = b.w("rope_freqs.weight", il)
            q, k = g.rope(q, pos, factors), g.rope(k, pos, factors)
        cur = b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"))
        cur, inpL, ffn_inp = _rows(b, il, out_ids, cur, inpL, ffn_inp)
        inpL = g.add(g.add(dense_ffn(b, ffn_inp, il), inpL), cur)
    b.output(inpL, rms=False, logit_scale=True)


def build_phi2(b: DecoderGraph) -> None:
    """llama_model_phi2::graph::graph."""
    g = b.g
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        normed, q, k, v = norm_qkv(b, il, inpL)
        q = g.unary("SCALE", g.rope(q, pos))
        cur = b.attn(inp, il, q, g.rope(k, pos), v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"))
        cur, inpL, normed = _rows(b, il, out_ids, cur, inpL, normed)
        inpL = g.add(g.add(cur, _gelu_ffn(b, normed, il)), inpL)
    b.output(inpL, b.w("output_norm.bias"), rms=False, head_bias=b.w("output.bias"))


def build_gptneox(b: DecoderGraph) -> None:
    """llama_model_gptneox::graph::graph with use_par_res."""
    g = b.g
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        _, q, k, v = norm_qkv(b, il, inpL)
        cur = b.attn(inp, il, g.rope(q, pos), g.rope(k, pos), v, b.lw(il, "attn_output.weight"),
                     b.lw(il, "attn_output.bias"))
        cur, inpL = _rows(b, il, out_ids, cur, inpL)
        ffn = b.norm(inpL, b.lw(il, "ffn_norm.weight"), b.lw(il, "ffn_norm.bias"), rms=False, il=il)
        inpL = g.add(g.add(_gelu_ffn(b, ffn, il), inpL), cur)
    b.output(inpL, b.w("output_norm.bias"), rms=False)


def build_falcon(b: DecoderGraph) -> None:
    """llama_model_falcon::graph::graph."""
    g, m = b.g, b.m
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        a = m.layers[il].attention
        attn_norm = b.norm(inpL, b.lw(il, "attn_norm.weight"), b.lw(il, "attn_norm.bias"), rms=False, il=il)
        n2 = b.lw(il, "attn_norm_2.weight")
        cur = b.norm(inpL, n2, b.lw(il, "attn_norm_2.bias"), rms=False, il=il) if n2 is not None else attn_norm
        q, k, v = qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
        cur = b.attn(inp, il, g.rope(q, pos), g.rope(k, pos), v, b.lw(il, "attn_output.weight"), None)
        cur, inpL, attn_norm = _rows(b, il, out_ids, cur, inpL, attn_norm)
        inpL = g.add(g.add(_gelu_ffn(b, attn_norm, il), cur), inpL)
    b.output(inpL, b.w("output_norm.bias"), rms=False)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {
    "command-r": build_cohere, "cohere2": build_cohere, "phi2": build_phi2, "falcon": build_falcon, "gptneox": build_gptneox}
