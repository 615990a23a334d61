"""Corrections to an NVIDIA card's datasheet tensor peak that prefill is measured against (hardware/speed.py): the
F16 path, a power-limited clock, and (below) Hopper's mma.sync share, moved here from hardware/speed.py.

**F16 weights under llama.cpp's CUDA backend run at the FP16-accumulate rate.** ggml-cuda multiplies an F16 weight
(and, in builds before MMQ became the default for large batches — PR #8075, 2024-06 — every quantized weight after
dequantizing it to F16) with cublasGemmEx at compute type CUBLAS_COMPUTE_16F, F16 in and F16 out
(ggml-cuda.cu ggml_cuda_op_mul_mat_cublas; only CDNA and RDNA4 take CUBLAS_COMPUTE_32F). The catalog's fp16 figure is
the FP32-accumulate rate (data/devices.json "tensor_figures"), which GeForce cards run at half their FP16-accumulate
rate and workstation/datacenter parts at the full rate (NVIDIA's Turing, GA102 and Ada whitepapers list both: RTX 4090
165.2 TFLOPS with FP32 accumulate, 330.3 with FP16 accumulate). The FP16-accumulate dense rate is half the dense INT8
rate on every tensor-core generation since Turing (same whitepapers; A100 312/624, H100 756/1513, L40S 362/733), so it
is taken as max(fp16, int8 / 2) — no list of GeForce names needed: a card whose int8 figure is 4× its fp16 one is a
half-rate part. llama.cpp's own thread shows the difference: CUBLAS_COMPUTE_32F was faster on an A6000 and a V100 and
slower on an RTX 3090 (PR #3816, 2023-10). BF16 and F32 weights take CUBLAS_COMPUTE_32F (the catalog figure).

**Power-limited clocks.** A datasheet peak is SMs × boost clock × the per-SM rate. Under a dense tensor load a card
holds its boost clock only if its board power allows it; workstation and datacenter parts put many SMs behind a low
power limit (RTX 6000 Ada: 142 SMs, 300 W; RTX 4090: 128 SMs, 450 W), so their clock falls. Below the knee the
power-capped card sits at the bottom of its voltage/frequency curve, where power is close to proportional to the clock,
so the share of the peak is taken as min(1, (board power / peak int8 TOPS) / knee), the knee being the watts per
datasheet TOPS below which an architecture's measured prompt rate falls: one constant per architecture (compute
capability), fitted on the seen prefill records of that architecture's cards of unlike power per TOPS
(evidence/speed_fit_knees.py fit_power_knees; none where the records cannot pin it: a single card, HBM parts). A card
below the lowest W per TOPS a knee was fitted on (data/speed_fit.json "power_knee_lowest_fitted_w_per_tops": an L4,
an A10) is held at the share there, not extrapolated: the sweep below falls less than in proportion (300 W of 600
kept ×0.77 of the rate), so the line would over-penalise exactly the cards no record covers. The L40's datasheet
int8 (362 TOPS, half its AD102 sibling L40S's 733) makes its W per TOPS 0.83 and its share 1.0 where the RTX 6000
Ada (same die, 300 W) gets 0.51: the halved figure stands in for the throttle, with no L40 record. The shape is
the one a public llama-bench power sweep shows (an RTX PRO 6000 Blackwell Workstation, build 233d773d0: pp512 of a 7B
Q4_0 16,634 / 16,496 / 16,060 / 15,225 / 14,119 / 12,802 tokens/s at 600 / 500 / 450 / 400 / 350 / 300 W — flat above a
knee, falling below it — while tg128 stayed at 279 down to 400 W: decode is memory-bound and is not corrected); that
file's repository is not named by the corpus index, so it is evidence for the shape only, not a fitted figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .backend_speed import cublas_type, nvidia_mmq

if TYPE_CHECKING:   # pragma: no cover
    from .catalog import Device

F16_NAMES = {"F16", "FP16", "FLOAT16"}


@dataclass(frozen=True)
class PeakShares:
    """The corrections a plan applied to its datasheet peak (mma_sync_share, fp16_accumulate_factor, clock_share), kept
    so --explain words the figures the peak was made of instead of working them out again."""
    mma_sync: float = 1.0
    f16: float = 1.0
    clock: float = 1.0


def _nvidia(dev: Device) -> bool:
    return (dev.vendor or "").lower() == "nvidia"


# The share of the datasheet int8 rate llama.cpp's kernels can reach, per NVIDIA architecture (compute capability
# major). llama.cpp's CUDA backend multiplies integer-quantized weights with its MMQ kernels (the default on Turing
# and later since PR #8075, 2024-06: mmq.cu ggml_cuda_should_use_mmq), whose tensor-core products are the warp-level
# PTX instruction mma.sync on every architecture (ggml-cuda/mma.cuh: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32;
# no wgmma anywhere in build 0c1e57098). Ampere, Ada and consumer Blackwell have nothing faster: mma.sync is their
# datasheet rate. Hopper (9.x: H100, H200, GH200, H800, H20) reaches its datasheet tensor rate only with the warpgroup
# instruction wgmma; instruction microbenchmarks measure mma.sync there at 494 of 757 dense FP16 TFLOPS on an H800
# PCIe, 65 %, against ~96 % for wgmma (Luo et al., "Dissecting the NVIDIA Hopper Architecture through
# Microbenchmarking and Multiple Level Analysis", arXiv:2501.12084; as quoted by waynehacking8/blackwell-tensorcore-
# kernels README @c289bde, whose own H100 SXM run has cuBLAS's wgmma kernel at 762 TFLOPS). The int8 form is taken at
# the same share (the same instruction class; the paper's int8 figure was not read). A cited constant, not fitted.
# Not applied: F16/BF16 weights (cuBLAS, which runs wgmma kernels on Hopper), datacenter Blackwell (10.x: tcgen05;
# no measurement of mma.sync there), other backends and runtimes (vLLM/SGLang kernels are their own).
MMA_SYNC_SHARE = {"9": 0.65}
MMA_SYNC_SOURCE = "arXiv:2501.12084"


def mma_sync_share(dev: Device | None, float_weights: bool, backend: str | None = "cuda") -> float:
    """The share of ``dev``'s datasheet int8 peak llama.cpp's CUDA MMQ kernels reach (MMA_SYNC_SHARE); 1.0 for float
    weights, other backends and architectures with no faster tensor instruction."""
    if dev is None or backend != "cuda" or float_weights or not dev.compute_capability or not _nvidia(dev):
        return 1.0
    return MMA_SYNC_SHARE.get(dev.compute_capability.split(".")[0], 1.0)


def fp16_accumulate_factor(dev: Device, quant: str | None, backend: str | None) -> float:
    """How many times the catalog's fp16 figure llama.cpp's cuBLAS F16 path can reach: int8 / (2 × fp16) on an NVIDIA
    card under the CUDA backend with F16 weights (2.0 on GeForce, 1.0 on workstation/datacenter parts), else 1.0."""
    if backend != "cuda" or (quant or "").upper() not in F16_NAMES or not _nvidia(dev):
        return 1.0
    if not dev.fp16_tflops or not dev.int8_tops:
        return 1.0
    ratio = dev.int8_tops / 2 / dev.fp16_tflops
    return ratio if ratio > 1.1 else 1.0      # full-rate parts: their figures' rounding, not a second rate


def borrowed_f16_path(quant: str | None, backend: str | None, ggml: bool,
                      float_weights: bool) -> tuple[str | None, str | None]:
    """The (weights' type, backend) whose llama.cpp path sets the prompt peak. A vLLM / SGLang / transformers plan
    (``ggml`` False) borrows llama.cpp's dense achieved rate — no prompt record of theirs to fit on — and for float
    weights that rate was fitted on llama.cpp's CUDA F16 rows (the FP16-accumulate path): it borrows that path whole, so
    its figure stays llama.cpp's F16 one on the same card (session 13's F16 rule moved only llama.cpp's own BF16, which
    ggml-cuda runs at FP32 accumulate). Integer-quantized weights (``float_weights`` False) and ggml plans keep their own."""
    return ("F16", "cuda") if not ggml and float_weights else (quant, backend)


# Weight-only formats whose prompt matmuls multiply 16-bit activations on the FP16/BF16 tensor cores outside ggml:
# vLLM's AWQ / GPTQ / compressed-tensors W4A16 kernels (csrc/quantization/awq gemm_kernels.cu, the Marlin kernels:
# mma.sync m16n8k16 on f16 / bf16 operands after dequantizing the 4-bit weights in registers) and bitsandbytes' 4-bit
# layers (Linear4bit: dequantize_4bit, then a matmul in the compute dtype, for batches over one token). Their ceiling is
# the fp16 tensor rate, not the int8 one llama.cpp's MMQ reaches for its integer types.
A16_WEIGHT_ONLY = frozenset({"nf4", "fp4", "nf4-dq", "fp4-dq", "awq", "gptq", "w4a16"})


def prompt_matmul_type(quant: str | None, ggml: bool, dev: Device | None = None, backend: str | None = None,
                       ubatch: int = 512) -> str | None:
    """The weights' type as a prompt's matmuls see it: "F16" for a weight-only 4-bit format outside ggml (above), so its
    peak, efficiency and F16 path are the float ones; likewise for ggml-cuda's integer types where its MMQ rule sends
    the ``ubatch``-token batch on ``dev`` to dequantize + cuBLAS (backend_speed.nvidia_mmq: Volta at 64+ tokens, P100,
    IQ1_M / TQ types): the weights dequantized to F16 (F32 on a card without fast FP16, fast_fp16_hardware_available:
    cc 6.1 and below 6.0), the float rate; the weights' own type otherwise (ggml's MMQ multiplies its integer types in
    int8, W8A8 formats run on the int8 / fp8 tensor cores)."""
    if not ggml and (quant or "").lower() in A16_WEIGHT_ONLY:
        return "F16"
    if ggml and backend == "cuda" and dev is not None and _nvidia(dev) \
            and nvidia_mmq(dev.compute_capability, quant, ubatch) is False:
        return cublas_type(dev.compute_capability)
    # F16 weights reach ggml_cuda_mul_mat_cublas too, which runs them in F32 where fast FP16 is missing (the same
    # fast_fp16_hardware_available gate: Pascal 6.1 at 1:64 FP16, Maxwell); an unknown compute capability keeps F16
    if ggml and backend == "cuda" and dev is not None and _nvidia(dev) and dev.compute_capability \
            and (quant or "").upper() in F16_NAMES and cublas_type(dev.compute_capability) == "F32":
        return "F32"
    return quant


def tensor_core_gap(dev: Device | None, backend: str | None, ggml: bool) -> str | None:
    """Why a llama.cpp prompt on ``dev`` is not predicted: a compute capability 7.5+ card whose catalog figures show no
    matrix unit (its fp16 is the vector rate, at most 2 × fp32: the GTX 16xx, TU116/TU117). ggml-cuda picks its
    tensor-core kernels by compute capability alone (common.cuh turing_mma_available: cc >= 7.5; mmq.cu sends every
    integer type to the int8 mma.sync MMQ there), and those run far below any published rate on these chips (llama.cpp
    PR #15360: 'code that uses tensor cores don't execute at nearly the full speed'; PR #15563 prints a warning for
    them at start-up). NVIDIA publishes no rate to price that against, and no constant is fitted; None elsewhere."""
    if dev is None or not ggml or backend != "cuda" or not _nvidia(dev):
        return None
    fp32, fp16 = dev.fp32_tflops, dev.fp16_tflops
    major, _, minor = (dev.compute_capability or "").partition(".")
    turing_up = major.isdigit() and (int(major), int(minor or 0) if minor.isdigit() else 0) >= (7, 5)
    if not (turing_up and fp32 and fp16 and fp16 <= 2 * fp32 and dev.int8_tops is None):
        return None
    return (f"not predicted on the {dev.name}: compute capability {dev.compute_capability} without tensor cores, and "
            "ggml-cuda runs its tensor-core kernels by compute capability (turing_mma_available), which these chips "
            "execute far below any published rate (llama.cpp PR #15360, #15563's start-up warning)")


def watts_per_tops(dev: Device) -> float | None:
    """Board power per datasheet dense INT8 TOPS (the INT8 rate is not halved on GeForce, so it compares SKUs)."""
    if not _nvidia(dev) or not dev.tdp_w or not dev.int8_tops:
        return None
    return dev.tdp_w / dev.int8_tops


def clock_share(dev: Device, knees: dict[str, float], floors: dict[str, float] | None = None) -> float:
    """The share of its boost clock ``dev`` holds under a dense tensor load: min(1, W per TOPS / its architecture's
    knee), the W per TOPS held at ``floors`` (the lowest its architecture's knee was fitted on: below it the linear
    shape is an extrapolation the RTX PRO 6000 sweep above says over-penalises); 1.0 where no knee is fitted for its
    compute capability or the catalog lacks its power or INT8 figure."""
    cc = dev.compute_capability or ""
    knee = knees.get(cc)
    ratio = watts_per_tops(dev)
    if not knee or ratio is None:
        return 1.0
    return min(1.0, max(ratio, (floors or {}).get(cc, 0.0)) / knee)


def factor_words(dev: Device, shares: PeakShares, knees: dict[str, float],
                 floors: dict[str, float] | None = None) -> list[str]:
    """The --explain words of the F16 path's factor and the clock share in ``shares`` (fp16_accumulate_factor,
    clock_share) as they apply to ``dev``."""
    words = []
    if shares.f16 > 1.0:
        words.append(f" × {shares.f16:.3g} (llama.cpp's F16 path: cuBLAS accumulates in FP16, which this card runs at "
                     f"{shares.f16:.3g}× its FP32-accumulate figure)")
    if shares.clock < 1.0:
        cc = dev.compute_capability or ""
        ratio = watts_per_tops(dev) or 0.0
        floor = (floors or {}).get(cc, 0.0)
        beyond = (f"; {ratio:.2f} is extrapolated beyond the fitted range: the share at its lowest, {floor:g}, is used"
                  if ratio < floor else "")
        words.append(f" × {shares.clock:.2f} (power-limited clock: {dev.tdp_w:g} W for {dev.int8_tops:g} int8 TOPS = "
                     f"{ratio:.2f} W per TOPS; fitted: this architecture's prompt rate falls with W per TOPS below "
                     f"{knees[cc]:g}{beyond})")
    return words
