"""A prompt token's attention on llama.cpp's CUDA backend with flash attention off (``-fa off``): the unfused graph
(review15b finding 5: the switch moved a pp512 prediction by about 1 % while the scoreboard's pairs read 6–18 % apart).

What the graph does instead of the one FlashAttention kernel (src/llama-graph.cpp ``build_attn_mha`` @00395eb2, the
``use_flash_attn`` false branch), per attention layer and micro-batch of n tokens over the n_kv cache cells in use:

* ``kq = ggml_mul_mat(k, q)`` with ``ggml_mul_mat_set_prec(kq, GGML_PREC_F32)``: the K cache (f16) times Q. On CUDA a
  multi-head product of an f16 matrix goes to cuBLAS (ggml-cuda.cu ``ggml_cuda_mul_mat_batched_cublas_impl``): Q is
  first converted to f16 (``get_nc_converter``), and GGML_PREC_F32 selects ``CUBLAS_COMPUTE_32F`` with an F32 result
  written straight out — the n_head × n × n_kv scores materialised in memory, 4 bytes each.
* ``ggml_soft_max_ext(kq, kq_mask, kq_scale, …)``: reads the F32 scores and the mask, writes F32 probabilities
  (4 + 4 bytes a score; the mask, n × n_kv shared by the heads, is left out).
* ``kqv = ggml_mul_mat(v, kq)``: V is stored transposed in the cache when flash attention is off (``v_trans``, so this
  product reads it as [n_kv, head width] rows); the F32 probabilities are converted to f16 for cuBLAS (read 4, write
  2 bytes a score), which reads them (2 bytes) under ``GGML_PREC_DEFAULT``: ``CUBLAS_COMPUTE_16F`` on NVIDIA — the
  FP16-accumulate rate (nvidia_peak.fp16_accumulate_factor), its f16 result converted back to F32 (n_head × head width
  × n: small). ``ggml_permute`` + ``ggml_cont_2d`` copy that result (small).

So a score costs SCORE_BYTES_PER_ELEMENT = 4 (KQ written) + 4 + 4 (softmax) + 4 + 2 (f16 conversion) + 2 (KQV reads
it) = 20 bytes of memory traffic, where the FlashAttention kernel keeps it on chip; and the two products run over every
cell in use — the causal mask's −inf entries are computed and then zeroed — where the MMA kernel stops each query tile
at its last unmasked cell (fattn-common ``flash_attn_mask_to_KV_max``): the cells in use for the micro-batch ending at
token t are depth + t, so a pp512 batch's products run over 512 cells for every token, not 256 on average.

Seconds per prompt token: Q·Kᵀ FLOPs ÷ the FP32-accumulate f16 tensor rate + softmax·V FLOPs ÷ the FP16-accumulate rate
(cuBLAS's tensor-op GEMMs: the catalog's fp16 figure × the clock share, no mma.sync share — cuBLAS is not ggml's
mma.sync code) + the scores' bytes ÷ (the entry's decode share × bandwidth) — the same streaming share a decoded token's
weight reads reach. No constant is fitted for it: both shares are the ones the rest of the model fits. The f16 cast of Q
and the transposed V write (a micro-batch's consecutive tokens fill adjacent cells of each transposed row, merged in
L2) are not priced.

It replaces, for a llama.cpp / Ollama plan on CUDA with flash attention off on an NVIDIA card of compute capability
7.0+ with an fp16 figure, the attention's FLOPs × ATTN_FACTOR at the matmul rate (a factor fitted on 2024 builds):
``plan_term``, **applied** (APPLIED). Its first held-out check (session 18, measurements/llamacpp_h200 run 1: 5 models
at depth 0 / 4K / 16K / 32K on an H200) failed, 9.6 % → 9.9 % ratio |error| median, because it priced a sliding layer
at its window: with swa_full (the C API's default) every cell in use is computed (layer_cells). Revised from the
source, not fitted (run 1: 7.1 %), its second held-out check (run 2: llama-3.2-3b, gemma-3-4b, phi-3-mini-4k,
qwen3-14b, qwen3-4b at 2K / 8K / 24K, rule and predictions committed before it) passed: 10.1 % → 6.0 % over 15 pairs
(fa_depth2_first_run.txt; worst phi-3-mini-4k at 24K, −39 %: its FA-on kernel term prices a 2,047 window llama.cpp
disables). Gemma 2's fused logit soft-cap (8 more bytes a score) is not priced. --explain shows the term in the prefill
step; evidence/speed_fit_faoff.py scores it on the tuning pairs; the speed fit's own rows (evidence/speed_fit.py
predict_row) keep ATTN_FACTOR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..runtimes.llamacpp_swa import as_llamacpp_loads
from .fa_prefill import applies as fa_mma_applies
from .nvidia_peak import clock_share, fp16_accumulate_factor

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec
    from ..runtimes.options import LlamaCppOptions
    from .catalog import Device
    from .speed import GPUPlace

APPLIED = True      # passed its second held-out check (module docstring)
SOURCE = ("llama.cpp src/llama-graph.cpp build_attn_mha @00395eb2 (no flash attention: ggml_mul_mat K·Q at "
          "GGML_PREC_F32, ggml_soft_max_ext, V transposed, ggml_mul_mat V·KQ); ggml-cuda.cu "
          "ggml_cuda_mul_mat_batched_cublas_impl (f16 casts, CUBLAS_COMPUTE_32F / 16F)")
# a score's bytes: KQ written (F32) + softmax read and write (F32) + the f16 cast's read (F32) and write (f16) + KQV's read
SCORE_BYTES_PER_ELEMENT = 4 + 4 + 4 + 4 + 2 + 2


def unfused_n_kv(depth: float, prompt: int, ubatch: int) -> float:
    """The cache cells the unfused products run over, averaged over a ``prompt``-token prompt after ``depth`` cached
    tokens in micro-batches of ``ubatch``: a batch ending at token t computes over depth + t cells for each of its
    tokens (masked cells included)."""
    step = max(1, min(ubatch, prompt))
    total = 0.0
    start = 0
    while start < prompt:
        end = min(prompt, start + step)
        total += (end - start) * (depth + end)
        start = end
    return total / prompt if prompt > 0 else depth


SWA_CACHE_PAD = 256     # src/llama-kv-cache-iswa.cpp: "the SWA cache is always padded to 256"


def layer_cells(window: int | None, n_kv: float, ubatch: int, swa_full: bool) -> float:
    """Cells a layer's unfused products run over (session 18b, llama.cpp 0c1e57098): ``llama_kv_cache::get_n_kv`` =
    the cells in use, capped at the layer's cache size. A sliding layer's cache (llama-kv-cache-iswa.cpp) holds
    pad(window + n_ubatch, 256) cells, or every cell with ``swa_full`` — the C API's default
    (``llama_context_default_params``, llama-context.cpp: swa_full = true; llama-server's common params set false) —
    and then nothing frees the cells outside the window: find_slot fills the empty cells ahead of its head, so the
    products run over every cell in use and the mask zeroes the rest."""
    if not window or swa_full:
        return n_kv
    size = -(-(window + ubatch) // SWA_CACHE_PAD) * SWA_CACHE_PAD
    return min(n_kv, size)


def unfused_products(model: ModelSpec, n_kv: float, ubatch: int, swa_full: bool) -> tuple[float, float, float]:
    """(Q·Kᵀ FLOPs, softmax·V FLOPs, score elements) a token's unfused attention computes over each layer's cells
    (layer_cells): 2 × heads × K (V) width per cell, and heads × cells scores materialised."""
    kq = vkq = scores = 0.0
    for att in model.attention_layers:
        cells = layer_cells(att.window, n_kv, ubatch, swa_full)
        kq += 2 * model.n_heads * att.k_dim * cells
        vkq += 2 * model.n_heads * att.v_dim * cells
        scores += model.n_heads * cells
    return kq, vkq, scores


def score_elements(model: ModelSpec, n_kv: float, ubatch: int = 512, swa_full: bool = False) -> float:
    """Attention scores a prompt token materialises: query heads × each layer's cells (layer_cells)."""
    return unfused_products(model, n_kv, ubatch, swa_full)[2]


@dataclass(frozen=True)
class FaOffAttention:
    """One prompt token's attention through the unfused graph: its two products' FLOPs over the cells in use, the
    scores it moves, and the rates they run at — what --explain shows."""
    n_kv: float             # cells the products run over (unfused_n_kv)
    kq_flops: float         # Q·Kᵀ, CUBLAS_COMPUTE_32F
    vkq_flops: float        # softmax·V, CUBLAS_COMPUTE_16F
    scores: float           # score elements (score_elements)
    peak_tflops: float      # the card's dense fp16 figure with FP32 accumulate
    clock: float            # the power-limited clock share (nvidia_peak.clock_share)
    f16_factor: float       # the FP16-accumulate rate's multiple of the FP32-accumulate one
    bandwidth_gbs: float    # the card's memory bandwidth
    bw_share: float         # the entry's decode share of it (Fit.decode_eff)

    @property
    def kq_tflops(self) -> float:
        return self.peak_tflops * self.clock

    @property
    def vkq_tflops(self) -> float:
        return self.kq_tflops * self.f16_factor

    @property
    def score_bytes(self) -> float:
        return self.scores * SCORE_BYTES_PER_ELEMENT

    @property
    def gemm_seconds(self) -> float:
        return (self.kq_flops / self.kq_tflops + self.vkq_flops / self.vkq_tflops) / 1e12

    @property
    def score_seconds(self) -> float:
        return self.score_bytes / (self.bw_share * self.bandwidth_gbs * 1e9)

    @property
    def seconds_per_token(self) -> float:
        return self.gemm_seconds + self.score_seconds


def applies(dev: Device | None, backend: str | None, ggml: bool, flash_attn_on: bool) -> bool:
    """Whether a prompt's attention runs the unfused graph this term prices: flash attention off where, on, it would
    run the MMA FlashAttention kernel (fa_prefill.applies)."""
    return not flash_attn_on and fa_mma_applies(dev, backend, ggml, True)


def fa_off_attention(model: ModelSpec, dev: Device, depth: float, prompt: int, ubatch: int, clock: float,
                     bw_share: float, swa_full: bool = False) -> FaOffAttention:
    """The term for a ``prompt``-token prompt after ``depth`` cached tokens on ``dev`` (applies() checked it);
    ``swa_full``: the sliding layers' cache holds every cell (layer_cells)."""
    assert dev.fp16_tflops is not None and dev.bandwidth_gbs
    n_kv = unfused_n_kv(depth, prompt, ubatch)
    kq, vkq, scores = unfused_products(model, n_kv, ubatch, swa_full)
    return FaOffAttention(n_kv, kq, vkq, scores, dev.fp16_tflops, clock,
                          fp16_accumulate_factor(dev, "F16", "cuda"), dev.bandwidth_gbs, bw_share)


def plan_term(model: ModelSpec, place: GPUPlace | None, llamacpp: LlamaCppOptions, prompt: int, ubatch: int,
              bw_share: float, knee: dict[str, float], knee_floor: dict[str, float] | None) -> FaOffAttention | None:
    """A plan's prompt attention through the unfused graph (from depth 0) on ``place``, where the term is applied and
    applies (llama.cpp / Ollama on CUDA with -fa off), at the clock share speed.py's power knees give."""
    dev = place.dev if place else None
    if not APPLIED or place is None or dev is None or not applies(dev, place.backend, place.ggml,
                                                                   llamacpp.flash_attn != "off"):
        return None
    clock = clock_share(dev, knee, knee_floor)      # the model as llama.cpp loads it: Phi-3's window dropped
    return fa_off_attention(as_llamacpp_loads(model), dev, 0.0, prompt, ubatch, clock, bw_share, llamacpp.swa_full)


def explain_words(term: FaOffAttention) -> tuple[str, str]:
    """--explain's formula and value for the term."""
    formula = (f"{term.kq_flops / 1e9:.3f} GFLOP Q·Kᵀ ÷ {term.kq_tflops:.1f} TFLOPS (cuBLAS, F32 accumulate: the fp16 "
               f"figure × clock share {term.clock:.2f}) + {term.vkq_flops / 1e9:.3f} GFLOP softmax·V ÷ "
               f"{term.vkq_tflops:.1f} TFLOPS (F16 accumulate) over {term.n_kv:,.0f} cells (the mask's too) + "
               f"{term.score_bytes / 1e6:.1f} MB of scores ({term.scores:,.0f} × {SCORE_BYTES_PER_ELEMENT} B: KQ "
               f"written, softmax read and written, cast to f16, read) ÷ ({term.bw_share:g} × {term.bandwidth_gbs:g} "
               f"GB/s) = {term.seconds_per_token * 1e6:.2f} µs a token (hardware/fa_off_prefill.py; held-out check: "
               "measurements/llamacpp_h200/fa_depth2_first_run.txt)")
    return formula, f"{term.seconds_per_token * 1e6:.2f} µs/token"


__all__ = ["APPLIED", "SCORE_BYTES_PER_ELEMENT", "SOURCE", "FaOffAttention", "applies", "explain_words",
           "fa_off_attention", "layer_cells", "plan_term", "score_elements", "unfused_n_kv", "unfused_products"]
