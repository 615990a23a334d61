"""A prompt token's attention under llama.cpp's CUDA FlashAttention MMA kernel (issue #18: ``ppN @ dD`` on CUDA with
flash attention was priced about 2× too slow).

Without this term a prompt token's attention FLOPs cost ATTN_FACTOR (4.25, fitted on prompt-length sweeps of 2024
builds, flash attention off: llama-bench's default then) matmul FLOPs at the weights' rate — for quantized weights on
NVIDIA a share of the int8 peak. With flash attention on, llama.cpp runs the attention of a prompt batch as one fused
kernel on the f16 tensor cores, so its cost is derived from that kernel instead:

* Which kernel. ggml/src/ggml-cuda/fattn.cu ``ggml_cuda_get_best_fattn_kernel`` (llama.cpp @00a2d609): on Turing and
  newer (``turing_mma_available``) a prompt batch — more than one or two query columns — takes
  ``BEST_FATTN_KERNEL_MMA_F16``; on Volta it does once the columns × the GQA ratio exceed 16 (since PR #17505,
  2025-11); cards without tensor cores run the tile kernel, not priced here. A quantized K/V cache is converted to f16
  first (``need_f16_K`` / ``need_f16_V`` for the MMA kernel), so the products are f16 products either way.
* At which rate. ggml/src/ggml-cuda/fattn-mma-f16.cuh ``mma_tile_sizes`` (@01c68426, Turing and newer):
  ``T_C_KQ = tile<16, 16, float>`` — Q·Kᵀ accumulates in F32 — and ``T_C_VKQ = tile<16, 8, half2>`` — softmax·V
  accumulates in F16 (its accumulators are rescaled as half2). So Q·Kᵀ runs at the card's FP32-accumulate f16 rate
  (the catalog's fp16 figure) and softmax·V at its FP16-accumulate rate: twice that on GeForce cards, the same on
  workstation and datacenter parts (hardware/nvidia_peak.py fp16_accumulate_factor). The instruction is mma.sync on
  every architecture, so Hopper reaches MMA_SYNC_SHARE of its datasheet rate (as MMQ does); a power-limited card its
  clock share.
* What else. Each CUDA block holds a tile of 8–64 query columns (``ncols``; GQA packs the query heads of one KV head
  into it) and walks the cache in chunks of ``nbatch_fa`` K/V rows through shared memory: K and V are read once per
  query tile, 32 FLOPs per f16 byte at 64 columns, a reuse the tiles running side by side on the card share through
  its L2. Those re-reads, the online softmax on the FP32 units (max, exp, rescale), the mask and the stream-k fixup
  are not priced apart: FA_MMA_EFF, the one fitted constant, is the share of the tensor-core rate the whole kernel
  reaches (evidence/speed_fit.py fit_fa_eff, on the tuning rows at depth: round 7's CUDA rows, llama.cpp PR #17505).

Seconds per prompt token: (Q·Kᵀ FLOPs ÷ the FP32-accumulate rate + softmax·V FLOPs ÷ the FP16-accumulate rate) ÷
FA_MMA_EFF, the FLOPs over the cache before the token (token_work.attention_product_flops). It applies to a
llama.cpp / Ollama plan or record on CUDA, an NVIDIA card of compute capability 7.0 or newer with an fp16 figure, and
flash attention on (a plan: ``-fa auto`` or ``on``, llama.cpp's default turns it on for CUDA; a record: ``"fa": 1``).
Everywhere else attention keeps ATTN_FACTOR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .nvidia_peak import fp16_accumulate_factor, mma_sync_share
from .token_work import attention_product_flops

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec
    from .catalog import Device

MMA_MIN_COMPUTE_CAPABILITY = 7.0    # Volta: fattn.cu's volta_mma_available branch (PR #17505); Turing+ always
SOURCE = ("llama.cpp ggml-cuda fattn.cu ggml_cuda_get_best_fattn_kernel @00a2d609, fattn-mma-f16.cuh mma_tile_sizes "
          "@01c68426")


@dataclass(frozen=True)
class FaAttention:
    """One prompt token's attention through the MMA FlashAttention kernel: the FLOPs of its two products, what the
    rates they run at are made of (the catalog's fp16 figure × mma.sync's share × the clock share; the FP16-accumulate
    rate's multiple of it) and the kernel's share of them — what --explain shows."""
    kq_flops: float         # Q·Kᵀ, F32 accumulate
    vkq_flops: float        # softmax·V, F16 accumulate
    peak_tflops: float      # the card's dense fp16 figure with FP32 accumulate
    mma_share: float        # mma.sync's share of it (Hopper: nvidia_peak.MMA_SYNC_SHARE)
    clock: float            # the power-limited clock share (nvidia_peak.clock_share)
    f16_factor: float       # the FP16-accumulate rate's multiple of the FP32-accumulate one
    eff: float              # FA_MMA_EFF: the share of those rates the kernel reaches (fitted)
    borrowed_by: str | None = None      # a runtime other than llama.cpp priced with llama.cpp's kernel (no record)

    @property
    def kq_tflops(self) -> float:
        """The FP32-accumulate f16 tensor rate the kernel's mma.sync reaches."""
        return self.peak_tflops * self.mma_share * self.clock

    @property
    def vkq_tflops(self) -> float:
        """… its FP16-accumulate rate."""
        return self.kq_tflops * self.f16_factor

    @property
    def seconds_per_token(self) -> float:
        return (self.kq_flops / self.kq_tflops + self.vkq_flops / self.vkq_tflops) / (self.eff * 1e12)


def applies(dev: Device | None, backend: str | None, ggml: bool, flash_attn_on: bool) -> bool:
    """Whether a prompt's attention runs through the MMA FlashAttention kernel (module docstring)."""
    if dev is None or not ggml or not flash_attn_on or backend != "cuda":
        return False
    if (dev.vendor or "").lower() != "nvidia" or not dev.fp16_tflops:
        return False
    try:
        return float(dev.compute_capability or 0) >= MMA_MIN_COMPUTE_CAPABILITY
    except ValueError:
        return False


def kernel_term(kq_flops: float, vkq_flops: float, dev: Device, clock: float, eff: float) -> FaAttention:
    """The kernel's term for the two products' FLOPs on ``dev`` at ``clock`` (nvidia_peak.clock_share) and ``eff``."""
    assert dev.fp16_tflops is not None      # applies() checked it
    return FaAttention(kq_flops, vkq_flops, dev.fp16_tflops, mma_sync_share(dev, False, "cuda"), clock,
                       fp16_accumulate_factor(dev, "F16", "cuda"), eff)


def mma_rates(dev: Device, clock: float) -> tuple[float, float]:
    """(FP32-accumulate, FP16-accumulate) f16 tensor TFLOPS the kernel's mma.sync reaches on ``dev`` at ``clock``."""
    term = kernel_term(0.0, 0.0, dev, clock, 1.0)
    return term.kq_tflops, term.vkq_tflops


def fa_attention(model: ModelSpec, dev: Device, ctx: float, clock: float, eff: float) -> FaAttention:
    """The attention of a prompt token over ``ctx`` cached tokens (a prompt of N after D: D + N/2 on average)."""
    return kernel_term(*attention_product_flops(model, ctx), dev, clock, eff)


__all__ = ["MMA_MIN_COMPUTE_CAPABILITY", "SOURCE", "FaAttention", "applies", "fa_attention", "kernel_term",
           "mma_rates"]
