"""llama.cpp's graphs for decoders with windowed attention beyond Gemma 2 / 3 and gpt-oss: Llama 4 (``llama4``,
chunked attention).

Mirrors, op for op and in their expansion order (which decides ggml-alloc's placement), the llama.cpp that
llama-cpp-python 0.3.36 vendors (0c1e57098), ggml-org/llama.cpp:
- src/models/llama4.cpp llama_model_llama4::graph<iswa>::graph: the temperature-tuning input (build_inp_attn_scale)
  after the positions, the iSWA cache pair (chunked layers in the SWA cache), RoPE on three layers of four
  (n_no_rope_layer_step 4) and on the fourth Q scaled by the temperature input instead, Q and K RMS-normed without a
  weight after RoPE (use_kq_norm: every type but 17B_128E, Maverick), and a sigmoid-routed MoE whose weights scale
  the input before the experts (build_moe_ffn's weight_before_ffn) plus a shared expert; dense FFN layers between
  MoE layers where n_moe_layer_step > 1;
- src/llama-graph.cpp build_inp_attn_scale, build_qkv, build_attn, build_ffn, build_moe_ffn (arch.DecoderGraph).
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .blocks import dense_ffn, pre_norm_layer, qkv
from .types import Tensor

if TYPE_CHECKING:    # arch.py registers these builders (and imports this module)
    from .arch import DecoderGraph

# llama-hparams.h n_no_rope_layer_step's default; llama4.cpp keeps it for the chunked (iSWA) models
NO_ROPE_LAYER_STEP = 4


def build_llama4(b: DecoderGraph) -> None:
    """llama_model_llama4::graph<iswa>::graph."""
    g, m = b.g, b.m
    iswa = any(a.kind == "sliding" for a in m.attention_layers)
    step = NO_ROPE_LAYER_STEP if iswa else m.n_layers + 1     # n_swa == 0: n_no_rope_layer_step = n_layer
    use_kq_norm = m.n_experts != 128                           # llama4.cpp: type != LLM_TYPE_17B_128E
    inpL = b.build_inp_embd()
    pos = b.build_inp_pos()
    attn_scale = b.inp("f32", (1, 1, b.n_tokens), "inp_attn_scale")
    inp = b.kv_inputs_iswa() if iswa else b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        def attn(cur: Tensor, il: int) -> Tensor:
            a = m.layers[il].attention
            q, k, v = qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
            use_rope = (il + 1) % step != 0
            if use_rope:
                factors = b.w("rope_freqs.weight", il)
                q, k = g.rope(q, pos, factors), g.rope(k, pos, factors)
            else:
                q = g.mul(q, attn_scale)
            if use_rope and use_kq_norm:
                q, k = g.rms_norm(q), g.rms_norm(k)
            return b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), None)

        def ffn(cur: Tensor, il: int) -> Tensor:
            if b.lw(il, "ffn_gate_inp.weight") is None:
                return dense_ffn(b, cur, il)
            moe_out = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=False, gating="sigmoid",
                            weight_before=True)
            return g.add(moe_out, dense_ffn(b, cur, il, "_shexp"))

        inpL = pre_norm_layer(b, il, inpL, out_ids, attn, ffn)
    b.output(inpL)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {"llama4": build_llama4}
