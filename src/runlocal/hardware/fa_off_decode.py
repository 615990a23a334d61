"""A decoded token's extra time on llama.cpp's CUDA backend with flash attention off (``-fa off``), over the same
token with the FlashAttention vector kernel (session 18b; measurements/llamacpp_h200 run 1: decode 7–50 % slower with
flash attention off, growing with depth; the speed fit's rows priced both alike, and plans took the entry's fitted KV
factor, fitted on older builds without flash attention). Applied (APPLIED) to CUDA plans with -fa off: the KV read at
the FA kernel's factor 1 plus these bytes (speed.flash_attention_fit, plan_bytes). Its held-out check (run 2, rule
fa_depth2_rule.md committed before it) passed: ratio |error| median 13.7 % → 2.5 % over 15 tg32 pairs.

The unfused graph for one token (src/llama-graph.cpp ``build_attn_mha`` @0c1e57098, the ``use_flash_attn`` false
branch; ggml-cuda.cu ``ggml_cuda_mul_mat``: an f16 src0 with one src1 column takes ``ggml_cuda_mul_mat_vec_f``), per
attention layer over its cells (fa_off_prefill.layer_cells):

* ``kq = ggml_mul_mat(k, q)``: mmvf, one block per (cell row, query head); a query head's block reads its K head's
  rows, so a K head's cells are read once per query head of its group (n_head ÷ n_head_kv times), where the FA vector
  kernel reads them once for the whole group. The scores are written out, F32: 4 bytes each.
* ``ggml_soft_max_ext`` (sinks folded in, ``ggml_soft_max_add_sinks``): reads and writes them, 4 + 4 bytes.
* ``kqv = ggml_mul_mat(v, kq)``: V is stored transposed (``v_trans``: rows of n_kv cells per head dimension), mmvf
  again, reading the F32 probabilities (4 bytes) and V once per query head of the group, like K.

So beyond the FA kernel's own reads: SCORE_BYTES = 16 a score (n_head × cells a layer), and the group's re-reads of K
and V, (n_head ÷ n_head_kv − 1) × cells × n_head_kv × (K + V width) × the cache type's bytes a layer. The re-reads run
concurrently in neighbouring blocks, so part of them comes from L2, not memory: GQA_DRAM_SHARE, the one fitted share
(fitted on run 1's 20 tg32 pairs, h200_fa_depth.jsonl: the median ratio |error| minimised). Both at the entry's decode
share of the bandwidth, the share a decoded token's weight reads reach. Not priced: the three extra kernel launches a
layer (KQ, softmax, KQV, then the permute's copy; run 1's depth-0 gaps, 8–28 µs a layer, are left unpriced — no source
gives a launch's µs under CUDA graphs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..runtimes.llamacpp_swa import as_llamacpp_loads
from .fa_off_prefill import layer_cells

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec
    from ..runtimes.options import LlamaCppOptions

SOURCE = ("llama.cpp src/llama-graph.cpp build_attn_mha @0c1e57098 (no flash attention: ggml_mul_mat K·q, "
          "ggml_soft_max_ext, ggml_mul_mat V·KQ with V transposed); ggml-cuda.cu ggml_cuda_mul_mat → "
          "ggml_cuda_mul_mat_vec_f for one token")
SCORE_BYTES = 4 + 4 + 4 + 4     # KQ written (F32), softmax read and written, KQV's read of the probabilities
APPLIED = True          # passed its held-out check (measurements/llamacpp_h200/fa_depth2_first_run.txt)
GQA_DRAM_SHARE = 0.41   # fitted: run 1 tg32 pairs, ratio |error| median 21.1 % → 4.1 % (predict_fa_depth2.py --tune)


@dataclass(frozen=True)
class FaOffDecode:
    """One decoded token's extra memory traffic with flash attention off, and its time — what --explain shows."""
    cells: float            # cells in use (the full layers'; a sliding layer's per layer_cells)
    score_bytes: float      # SCORE_BYTES × n_head × each layer's cells
    reread_bytes: float     # the query groups' extra K and V reads, before the DRAM share
    dram_share: float       # GQA_DRAM_SHARE
    bandwidth_gbs: float
    bw_share: float         # the entry's decode share (Fit.decode_eff)

    @property
    def seconds_per_token(self) -> float:
        return (self.score_bytes + self.dram_share * self.reread_bytes) / (self.bw_share * self.bandwidth_gbs * 1e9)


def fa_off_decode(model: ModelSpec, cells: float, bandwidth_gbs: float, bw_share: float, *, kv_bytes: float = 2.0,
                  ubatch: int = 512, swa_full: bool = False, dram_share: float | None = None) -> FaOffDecode:
    """The extra for a token decoded over ``cells`` cached tokens; ``kv_bytes`` the cache type's bytes an element
    (f16: 2)."""
    scores = reread = 0.0
    for att in model.attention_layers:
        n = layer_cells(att.window, cells, ubatch, swa_full)
        scores += SCORE_BYTES * model.n_heads * n
        group = model.n_heads / att.n_kv_heads
        reread += (group - 1) * n * att.n_kv_heads * (att.k_dim + att.v_dim) * kv_bytes
    return FaOffDecode(cells, scores, reread, GQA_DRAM_SHARE if dram_share is None else dram_share, bandwidth_gbs,
                       bw_share)


def plan_bytes(model: ModelSpec, cells: float, kv_read: float, llamacpp: LlamaCppOptions) -> float:
    """The extra bytes a plan's decoded token moves with flash attention off (0 with it on) over ``cells`` cached
    tokens (the re-reads at their DRAM share), the cache type's bytes an element taken from the plan's KV read."""
    if llamacpp.flash_attn != "off":
        return 0.0
    ubatch = llamacpp.ubatch or 512
    model = as_llamacpp_loads(model)        # the windows llama.cpp keeps (Phi-3's dropped: runtimes/llamacpp_swa.py)
    elements = sum(layer_cells(att.window, cells, ubatch, llamacpp.swa_full) * att.n_kv_heads * (att.k_dim + att.v_dim)
                   for att in model.attention_layers)
    d = fa_off_decode(model, cells, 1.0, 1.0, kv_bytes=kv_read / elements if elements and kv_read else 2.0,
                      ubatch=ubatch, swa_full=llamacpp.swa_full)
    return d.score_bytes + d.dram_share * d.reread_bytes


__all__ = ["GQA_DRAM_SHARE", "SCORE_BYTES", "SOURCE", "FaOffDecode", "fa_off_decode", "plan_bytes"]
