"""llama.cpp's graphs for dense decoders that differ from llama's in their norms or positions: OLMo (``olmo``),
OLMo 2 (``olmo2``, without sliding-window layers), Gemma (``gemma``), SmolLM3 (``smollm3``), GLM-4 (``glm4``)
and StableLM (``stablelm``).

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/olmo.cpp llama_model_olmo::graph::graph: layer norms with no weight or bias (LLM_NORM, NULL, NULL)
  before attention, before the FFN and at the output;
- src/models/olmo2.cpp llama_model_olmo2::graph<false>::graph: no pre-norms; Q and K RMS-normed over all their
  heads before the reshape to heads (build_qkv without the reshape), RoPE, post-attention and post-FFN RMS norms;
- src/models/gemma.cpp llama_model_gemma::graph::graph: embeddings scaled by √n_embd (a new tensor), Q scaled
  after RoPE, a GELU-gated FFN; no post norms, no Q/K norms, one KV cache;
- src/models/smollm3.cpp llama_model_smollm3::graph::graph: llama's block with no RoPE on every 4th layer
  (n_no_rope_layer_step = 4, set by load_arch_hparams);
- src/models/glm4.cpp llama_model_glm4::graph::graph (text RoPE: use_mrope is false without rope sections):
  post-attention and post-FFN norms, the fused gate_up FFN (LLM_FFN_SWIGLU, LLM_FFN_SEQ);
- src/models/stablelm.cpp llama_model_stablelm::graph::graph: layer norms with bias, optional per-head Q/K layer
  norms, the FFN fed the attention's normed input where the layer has no ffn_norm (StableLM 2 1.6B's parallel
  residual);
- src/llama-graph.cpp build_qkv, build_attn, build_ffn (arch.DecoderGraph).
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .blocks import attention, dense_ffn, inputs, last_rows, norm_qkv, pre_norm_layer, qk_norms, qkv
from .types import Tensor

if TYPE_CHECKING:    # arch.py registers these builders (and imports this module)
    from .arch import DecoderGraph


def build_olmo(b: DecoderGraph) -> None:
    """llama_model_olmo::graph::graph (no clamp_kqv: OLMo 1's configs set clip_qkv null)."""
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():       # (OLMo's GGUF has no norm weights: pre_norm_layer finds none)
        inpL = pre_norm_layer(b, il, inpL, out_ids, lambda cur, il: attention(b, inp, il, cur, pos),
                              lambda cur, il: dense_ffn(b, cur, il), rms=False)
    b.output(inpL, rms=False, norm_weight=False)


def build_olmo2(b: DecoderGraph) -> None:
    """llama_model_olmo2::graph<false>::graph (every layer full attention)."""
    g = b.g
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        inpSA = inpL
        cur = attention(b, inp, il, inpL, pos, flat_qk_norm=True)
        cur, inpSA = last_rows(b, il, out_ids, cur, inpSA)
        cur = b.norm(cur, b.lw(il, "post_attention_norm.weight"), il=il)
        ffn_inp = g.add(cur, inpSA)
        cur = b.norm(dense_ffn(b, ffn_inp, il), b.lw(il, "post_ffw_norm.weight"), il=il)
        inpL = g.add(cur, ffn_inp)
    b.output(inpL)


def build_gemma1(b: DecoderGraph) -> None:
    """llama_model_gemma::graph::graph."""
    g, m = b.g, b.m
    inpL = g.unary("SCALE", b.build_inp_embd())
    pos, inp, out_ids = b.build_inp_pos(), b.kv_inputs(), b.build_inp_out_ids()
    for il in b.layer_ids():
        def attn(cur: Tensor, il: int) -> Tensor:
            a = m.layers[il].attention
            q, k, v = qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
            q = g.unary("SCALE", g.rope(q, pos))
            return b.attn(inp, il, q, g.rope(k, pos), v, b.lw(il, "attn_output.weight"), None)

        inpL = pre_norm_layer(b, il, inpL, out_ids, attn, lambda cur, il: dense_ffn(b, cur, il))
    b.output(inpL)


# smollm3.cpp load_arch_hparams: hparams.n_no_rope_layer_step = 4
SMOLLM3_NO_ROPE_STEP = 4


def build_smollm3(b: DecoderGraph) -> None:
    """llama_model_smollm3::graph::graph."""
    inpL, pos, inp, out_ids = inputs(b)
    def attn(cur: Tensor, il: int) -> Tensor:
        use_rope = (il + 1) % SMOLLM3_NO_ROPE_STEP != 0
        return attention(b, inp, il, cur, pos if use_rope else None, out_bias=True)

    for il in b.layer_ids():
        inpL = pre_norm_layer(b, il, inpL, out_ids, attn, lambda cur, il: dense_ffn(b, cur, il))
    b.output(inpL)


def build_glm4(b: DecoderGraph) -> None:
    """llama_model_glm4::graph::graph."""
    g = b.g
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        inpSA = inpL
        cur = attention(b, inp, il, b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il), pos)
        cur, inpSA = last_rows(b, il, out_ids, cur, inpSA)
        ffn_inp = g.add(b.norm(cur, b.lw(il, "post_attention_norm.weight"), il=il), inpSA)
        cur = b.norm(ffn_inp, b.lw(il, "ffn_norm.weight"), il=il)
        cur = b.ffn(cur, b.lw(il, "ffn_up.weight"), None, b.lw(il, "ffn_down.weight"), par=False,  # type: ignore[arg-type]
                    act="swiglu")
        cur = b.norm(cur, b.lw(il, "post_ffw_norm.weight"), il=il)
        inpL = g.add(cur, ffn_inp)
    b.output(inpL)


def build_stablelm(b: DecoderGraph) -> None:
    """llama_model_stablelm::graph::graph."""
    g, m = b.g, b.m
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        inpSA, q, k, v = norm_qkv(b, il, inpL)
        q, k = qk_norms(b, il, q, k, rms=False)
        cur = b.attn(inp, il, g.rope(q, pos), g.rope(k, pos), v, b.lw(il, "attn_output.weight"), None)
        if il == m.n_layers - 1:
            cur, inpL, inpSA = (g.get_rows(t, out_ids) for t in (cur, inpL, inpSA))
        ffn_inp = g.add(cur, inpL)
        fn = b.lw(il, "ffn_norm.weight")
        cur = b.norm(ffn_inp, fn, b.lw(il, "ffn_norm.bias"), rms=False, il=il) if fn is not None else inpSA
        inpL = g.add(dense_ffn(b, cur, il), ffn_inp)
    b.output(inpL, b.w("output_norm.bias"), rms=False)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {"olmo": build_olmo, "olmo2": build_olmo2,
                                                       "gemma": build_gemma1, "smollm3": build_smollm3,
                                                       "glm4": build_glm4, "stablelm": build_stablelm}
