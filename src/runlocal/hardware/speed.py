"""Predicted decode and prefill speed from memory bandwidth and compute.

Decode is memory-bound. Each generated token reads the weights it uses once (dense layers whole, routed experts
``n_active / n_experts`` of them, the input embedding one row) plus the KV cache so far, and pays a fixed cost per
layer (kernel launches and synchronisation)::

    s/token = (weight bytes read + kv_factor × KV bytes read) / (decode_eff × bandwidth)
              + layers × layer_us + (devices − 1) × SPLIT_OVERHEAD_MS

Weights split over several devices (llama.cpp's layer split, or weights left in RAM) are read one device after
another, so their times add; tensor parallelism reads ``1/tp`` of every layer on each device at once
(``TP_EFFICIENCY`` of the ideal speed-up) and adds two all-reduces a layer. Weights in RAM are read by the CPU at RAM
bandwidth × ``CPU.decode_eff``.

Prefill is compute-bound: 2 FLOPs per active weight per token plus the attention over the prompt so far, at a fitted
share of the device's peak — its int8 tensor TOPS for integer-quantized weights on NVIDIA (llama.cpp's MMQ kernels
multiply in int8; on Hopper only the share mma.sync reaches, nvidia_peak.py MMA_SYNC_SHARE), its dense fp16 TFLOPS
otherwise, and for integer weights that ggml-cuda dequantizes for cuBLAS instead (a V100 at 64+ tokens:
backend_speed.nvidia_mmq) the float weights' share of it — plus a fitted fixed cost per layer per token
(``Fit.prefill_layer_us``). Weights in RAM cross PCIe once per micro-batch of ``UBATCH`` tokens (llama.cpp runs large
batches on the GPU), except those the CPU repacks under ``--no-host``: their matmuls stay on the CPU, at
HOST_REPACKED_GEMM_GFLOPS. The attention's FLOPs count ATTN_FACTOR matmul FLOPs each, except where llama.cpp runs them
as its CUDA FlashAttention kernel (flash attention on, an NVIDIA card of compute capability 7.0+): there they take
that kernel's own time (fa_prefill.py).

The constants are fitted per device class and backend, and per variant where a backend runs differently per chip
(``backend_variant``: SYCL per Intel architecture and kernel path, Metal on Apple M3+) (``FIT``) to the public
measurements in ``measurements/speed/*.jsonl`` (each record cites its source) by ``benchmarks/speed_accuracy.py
--fit``, which prints them (``--write`` stores them in ``data/speed_fit.json``, read below); the same script prints
the error per device class and a leave-one-device-out error. Most records come from 2024 llama.cpp builds (no CUDA
graphs, flash attention off by default): their per-layer cost and KV factor are the upper end for today's builds,
which run small models and long contexts faster. The CUDA entry for GDDR cards and the Vulkan entries are fitted on
2025-2026 builds alone, the KV factor derived for flash attention (hardware/build_era.py); Metal keeps the entry every
era's records fit (a current-build refit failed its held-out round: build_era.py). vLLM/SGLang and CPU constants are
stated priors, not fits."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..kv import kv_bytes
from ..runtimes.registry import engine
from . import fa_off_decode as FOD
from . import fa_off_prefill as FOP
from .backend_speed import moe_prefill_gap, moe_prefill_range, nvidia_kernel_words, pre_volta_decode_variant
from .build_era import FA_DERIVED_BACKENDS, FA_KV_FACTOR, prefill_entry
from .fa_prefill import FaAttention, fa_attention
from .fa_prefill import applies as fa_mma_applies
from .host_link import (  # noqa: F401 — PCIe figures re-exported: speed.pcie_gbs / host_link_gbs / PAGEABLE_H2D_GBS
    DEFAULT_PCIE_GBS,
    PAGEABLE_H2D_GBS,
    PAGEABLE_NOTE,
    PCIE_EFFICIENCY,
    PCIE_GBS_PER_LANE,
    host_link_gbs,
    pageable_range,
    pcie_gbs,
)
from .nvidia_peak import (
    PeakShares,
    borrowed_f16_path,
    clock_share,
    fp16_accumulate_factor,
    mma_sync_share,
    prompt_matmul_type,
    tensor_core_gap,
)
from .ram_reads import WeightReads, weight_reads
from .recurrent_speed import (
    PLANNED_GDN_PATH,
    explain_notes,
    extra_layers,
    recurrent_state_traffic,
    scan_seconds,
    state_traffic_words,
    with_scan,
)
from .soc_prompt import soc_cuda_gap
from .token_work import (
    UBATCH,
    active_matmul_params,
    attention_flops_per_token,
    expert_factor,
    is_float_quant,
    padding_flops,
    prefill_matmul_flops,
    prompt_over_context,
    read_fraction,
    rest_read_fraction,
    routed_expert_params,
    routed_expert_types,
    time_to_first_token,
)
from .ubatch_speed import UbatchTerm, plan_term, with_term

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec
    from .catalog import Device


@dataclass(frozen=True)
class Fit:
    decode_eff: float               # achieved share of datasheet memory bandwidth on weight reads
    layer_us: float                 # fixed cost per layer per token, microseconds
    kv_factor: float                # a KV byte costs this many weight bytes (attention reads it less efficiently)
    prefill_eff_quant: float | None = None   # achieved share of the peak for integer-quantized weights
    prefill_eff_float: float | None = None   # … for f16/bf16/f32 weights
    # prefill: fixed cost per layer per prompt token, µs — time that does not scale with the layer's FLOPs, so small
    # models pay relatively more: the non-matmul kernels (norms, RoPE, activation quantization for MMQ, KV stores,
    # attention at a short depth) and the matmuls' own fixed costs. Fitted per class on pp512 rows of models of
    # unlike size (evidence/speed_fit.py fit_prefill_layer_us); which of those parts it is was not measured.
    prefill_layer_us: float = 0.0


# --- fitted constants ----------------------------------------------------------------------------------
# src/runlocal/data/speed_fit.json, written by `python benchmarks/speed_accuracy.py --write` (the fit: runlocal.evidence.
# speed_fit) from measurements/speed/*.jsonl: llama-bench results from XiongjieDai/GPU-Benchmarks-on-LLM-Inference
# (Llama 3 8B/70B on 13 NVIDIA GPUs and 4 Apple chips, 2024-05), geerlingguy/ai-benchmarks issues (tg128, 2025) and
# llama.cpp pull-request/issue threads. FIT's keys are "class/backend", "class" (all backends) and "*" (every device):
# the fallbacks. SPLIT_OVERHEAD_MS: per extra device a token crosses in a layer split; ATTN_FACTOR: in prefill, an
# attention FLOP costs this many matmul FLOPs.
FIT_PATH = Path(__file__).resolve().parents[1] / "data" / "speed_fit.json"
FIT_SOURCE = ("fitted by runlocal.evidence.speed_fit (python benchmarks/speed_accuracy.py --write) to "
              "measurements/speed/*.jsonl; read by runlocal.hardware.speed")
_FITTED = json.loads(FIT_PATH.read_text(encoding="utf-8"))
FIT: dict[str, Fit] = {k: Fit(**v) for k, v in _FITTED["fit"].items()}
SPLIT_OVERHEAD_MS: float = _FITTED["split_overhead_ms"]
ATTN_FACTOR: float = _FITTED["attn_factor"]
# flash attention on CUDA: the share of the f16 tensor rates llama.cpp's MMA FlashAttention kernel reaches in a prompt
# batch (hardware/fa_prefill.py; fitted by evidence/speed_fit.py fit_fa_eff on the tuning rows at depth)
FA_MMA_EFF: float = _FITTED["fa_mma_eff"]
# Apple M3 and later: Apple publishes GPU core counts but no clock or TFLOPS, so prefill is measured against
# gpu_cores × a per-core rate per chip generation ("m3", "m4", "m5"), fitted (benchmarks/speed_accuracy.py) to the
# TUNING part of the measured llama-bench runs (measurements/speed/apple_cores/ and the M3 Max rows of
# xiongjiedai_llama3.jsonl) in the same units as the M1/M2 fp16 figures (cores × 128 lanes × 2 FLOP × clock), so the
# Apple class's prefill efficiencies apply unchanged. Held-out chips are scored apart (measurements/speed/held_out/).
APPLE_CORE_TFLOPS: dict[str, float] = dict(_FITTED.get("apple_core_tflops", {}))
# NVIDIA, per architecture (compute capability): the watts per datasheet INT8 TOPS below which its prompt rate is fitted to
# fall (benchmarks/speed_accuracy.py; hardware/nvidia_peak.py says why), and the lowest W per TOPS that fit saw (floor).
POWER_KNEE_W_PER_TOPS: dict[str, float] = dict(_FITTED.get("power_knee_w_per_tops", {}))
POWER_KNEE_FLOOR: dict[str, float] = dict(_FITTED.get("power_knee_lowest_fitted_w_per_tops", {}))

# Priors: not fitted (no public measurement in the dataset covers them); stated so the formula stays traceable.
PRIOR = Fit(0.70, 100.0, 2.8, 0.2, 0.4)   # a GPU class with no measurement
# llama.cpp CPU decode: ~half of DIMM bandwidth on all cores, 20 µs a layer-equivalent. NO SOURCE (review22 #8): 0.55
# came with the first speed model (b0fa41a6, DECODE_EFFICIENCY["cpu"]; its commit added no measurement and no
# benchmark script), the 20 µs with its rewrite (16476cb1). CHECKED, NOT FITTED (session 22, cpuspeed22): the rule of
# measurements/speed/cpu_decode_queries.md (committed before its 16 queries) placed 5 public CPU-only tg128 rows from 2
# sources (measurements/speed/cpu_decode/: llama.cpp #11744, dual EPYC 9175F 16 × DDR5-6400 --numa distribute; ahelpme.com
# ?p=6685, EPYC 9554 12 × DDR5-5600, Phi-4 Q4_K_M…Q8_0). These constants read them at median |error| 7.8 %, p90 25.2 %
# (all under: −1.8 … −25.2 %); the rule's grid fit (0.81, 291 µs) reads 0.6 % / 1.0 % on the same rows, but no third
# source was found, so nothing was held out and nothing may be adopted; the 291 µs is one host's quant slope (Q4_K_M →
# Q8_0: 1.72× the bytes, 1.50× the time), which a per-quant compute cost would explain as well (python
# benchmarks/cpu_decode_accuracy.py). Their other check: the make_plan hold-out's 9 rows with weights in RAM
# (measurements/speed/llmfit_rtx2080.jsonl: one RTX 2080 + i9-10900X host; 12.3 % over its 18 rows). They also stand in
# for what the model leaves out on a split graph (each layer's activations to and from the host, the syncs): priced with
# the host's bytes split by tensor (the host holds routed experts, read k/E; the GPU the attention, read whole — not
# applied) those 3 expert-offload rows read +43 / +53 / +58 % instead of −1 / +9 / +9 %, so a plan keeps one read share
# for every device (token_work.rest_read_fraction) until a source separates the two.
CPU = Fit(0.55, 20.0, 1.0, 0.5, 0.5)
CPU_PRIOR_WORDS = ("the CPU part's 0.55 × bandwidth and 20 µs a layer-equivalent: stated priors, checked, not fitted "
                   "(5 public CPU-only tg128 rows from 2 hosts read −1.8 … −25.2 %, median |error| 7.8 %: "
                   "benchmarks/cpu_decode_accuracy.py; no held-out part, so no refit adopted)")
# Serving engines replay CUDA graphs (a few µs a layer) and read a paged KV cache with flash-attention kernels.
RUNTIME_PRIOR = {"vllm": Fit(0.75, 10.0, 1.0), "sglang": Fit(0.75, 10.0, 1.0)}
CPU_FLOPS_PER_CORE = 100e9           # prefill on CPU: fp16/int8 dot products per core (AVX2/AVX-512, no AMX)
CPU_CORES = 8
TP_EFFICIENCY = 0.85                 # share of the ideal tp× speed-up tensor-parallel reads keep
TP_ALLREDUCE_US = 20.0               # one all-reduce of a token's activations; tensor parallel needs two a layer
SHORT_CONTEXT = 512                  # the short-context decode figure: KV of a 512-token prompt (llama-bench pp512/tg128)
# What a prompt batch leaves on the CPU with a GPU present: the matmuls on weights in the CPU's repack buffer
# (llama-server --no-host: src/llama-model.cpp make_cpu_buft_list puts a host weight the CPU repacks in CPU_REPACK, which
# is not a host buffer, so ggml-backend.cpp ggml_backend_sched_backend_id_from_cur never offloads its op; runtimes/
# llamacpp_nohost.py says which weights, ggml/repack.py why). The GPU waits for them (the scheduler runs its splits one
# after another: ggml_backend_sched_compute_splits), so their time adds. Their rate: the host CPU's achieved rate on
# repacked 4-bit expert matmuls (MUL_MAT_ID, q4_K_8x8_q8_K on an AVX2 build), FITTED on two of the three measured
# --no-host runs — Qwen3.6-35B-A3B and Qwen3-30B-A3B Q4_K_M on the H200's host: 16 threads on its 16 vCPUs (an Intel
# Xeon; the model was not recorded), llama.cpp 0c1e57098 built for AVX2 (measurements/llamacpp/build_libs.sh) — 318 and
# 317 GFLOPS beyond the plan's other terms (measurements/llamacpp_cpumoe/cuda_h200.jsonl): one machine's figure, no
# held-out part. The third run (gpt-oss-20b, MXFP4 repacked as mxfp4_8x8_q8_0) ran at 156 GFLOPS:
# not modelled (tests/accuracy/test_llamacpp_cpumoe_cuda.py holds the miss). Dense layers' repacked matmuls (-ngl
# partial with --no-host) take the same rate, unmeasured. For scale, runlocal's CPU-only prior is CPU_CORES ×
# CPU_FLOPS_PER_CORE = 800 GFLOPS.
HOST_REPACKED_GEMM_GFLOPS = 317.0

DEFAULT_BACKEND = {"nvidia-gddr": "cuda", "nvidia-hbm": "cuda", "amd": "rocm", "apple": "metal",
                   "intel": "sycl", "soc": "vulkan", "cpu": "cpu"}


# --- device classes ------------------------------------------------------------------------------------

def device_class(dev: Device | None, kind: str = "gpu") -> str:
    """The class the constants are fitted per: the memory system and vendor decide decode speed.

    nvidia-gddr (GeForce, RTX workstation, L4/L40S/A10/T4), nvidia-hbm (A100, H100, H200, B200, V100),
    amd, apple, intel, soc (other unified-memory chips: DGX Spark, Strix Halo), cpu.
    """
    if dev is None:
        return "cpu" if kind == "cpu" else ("soc" if kind == "unified" else "nvidia-gddr")
    vendor = (dev.vendor or "").lower()
    if dev.kind == "cpu":
        return "cpu"
    if vendor == "apple" or dev.kind == "apple":
        return "apple"
    if dev.kind == "unified" or dev.unified_memory:
        return "soc"
    if vendor == "amd":
        return "amd"
    if vendor == "intel":
        return "intel"
    return "nvidia-hbm" if (dev.memory_type or "").upper().startswith("HBM") else "nvidia-gddr"


def default_backend(dev: Device | None, klass: str) -> str:
    if klass == "soc" and dev is not None and dev.backends:
        return dev.backends[0]
    return DEFAULT_BACKEND.get(klass, "cuda")


# Apple M3 and later ("apple/metal:m3+") read a larger share of their bandwidth in decode than the M1/M2 chips that
# dominate the Apple fit: on the fitted records the M3 Max / M3 Ultra / M4 rows were predicted 7 % slow (median of
# 16), the M1/M2 rows 3 % fast (the M3 GPU's dynamic caching, WWDC 2023 / Apple M3 launch, 2023-10).
# llama.cpp's SYCL backend decodes differently per Intel GPU architecture and per matmul-vector path, so its fit
# has variants "intel/sycl:<arch>[-dmmv]". Arc A-series = Xe-HPG (Alchemist: 16 XVEs and 16 1024-bit XMX engines a
# core), Arc B-series = Xe2-HPG (Battlemage: 8 wider XVEs and 8 2048-bit XMX engines a core; Intel's Xe2 launch
# material, 2024-12). Path: ggml-sycl sends a one-token Q4_0/Q4_K/Q6_K product to dequantize_mul_mat_vec (DMMV)
# unless the reorder optimisation picks its reordered MMVQ kernel (ggml_sycl_mul_mat: DMMV first,
# ggml_sycl_supports_reorder_mmvq; PRs #12858, #13109, #13885); the reorder is on by default since PR #14504
# (2025-07: PR #13973 meant to turn it on but a boolean bug kept it off), off with GGML_SYCL_DISABLE_OPT=1 — a plan
# uses the default, records name theirs ("sycl_reorder"). The default changed with builds before that (the Q4_0
# reorder came with PR #12035, was turned off by default by #12560 and again by #13254); those PRs' builds are not
# pinned, so --runtime llama.cpp==bNNNN does not switch the path (measurements/speed/README.md, "SYCL by build").
INTEL_ARCH = (("arc-pro-b", "xe2"), ("arc-b", "xe2"), ("arc-a", "xe-hpg"))


def intel_arch(dev: Device | None) -> str | None:
    """"xe-hpg" for an Arc A-series entry, "xe2" for an Arc B-series one (by catalog family); None otherwise."""
    if dev is None or device_class(dev) != "intel":
        return None
    family = dev.family or dev.id
    return next((arch for prefix, arch in INTEL_ARCH if family.startswith(prefix)), None)


# A GP10x GDDR5 card (Tesla P40, GTX 1070 / 1060) has no decode row of its own: it takes the GDDR5X class's share
# (GTX 1080 Ti), since what the source names for it (no CUDA graph replay, mmvq's generic table) is the architecture's,
# not the memory's. Checked out of sample on held_out/pascal_first_run.txt's P40 run, which the share was not fitted on.
PRE_VOLTA_SIBLING = {"cc6-gddr5": "cc6-gddr5x"}


def backend_variant(dev: Device | None, backend: str | None, *, decode: bool = True,
                    reorder: bool = True) -> str | None:
    """The fit variant a device runs on a backend: SYCL on Intel → its architecture, "-dmmv" for a decode with
    the reorder off (GGML_SYCL_DISABLE_OPT=1 or a build before it); Metal on Apple M3 and later → "m3+"; a CUDA decode
    on an NVIDIA card older than Volta → its memory class (backend_speed.pre_volta_decode_variant); None elsewhere."""
    if backend == "cuda":
        own = pre_volta_decode_variant(dev.compute_capability, dev.memory_type, backend) if dev and decode else None
        return PRE_VOLTA_SIBLING.get(own or "", own) if f"nvidia-gddr/cuda:{own}" not in FIT else own
    if backend == "metal" and dev is not None and apple_generation(dev):
        return "m3+" if int((apple_generation(dev) or "m0")[1:]) >= 3 else None
    arch = intel_arch(dev) if backend == "sycl" else None
    if arch is None:
        return None
    return f"{arch}-dmmv" if decode and not reorder else arch


def constants(klass: str, backend: str | None = None, variant: str | None = None) -> Fit:
    """The fitted constants for a class, backend and variant, falling back to the class and backend, the class,
    then to all devices. Runtimes other than llama.cpp (no measurement in the dataset) take RUNTIME_PRIOR's decode
    constants and the class's prefill efficiencies."""
    if klass == "cpu":
        return CPU
    fit = ((FIT.get(f"{klass}/{backend}:{variant}") if variant else None) or FIT.get(f"{klass}/{backend}")
           or FIT.get(klass) or FIT.get("*") or PRIOR)
    prior = RUNTIME_PRIOR.get(backend or "")
    if prior and f"{klass}/{backend}" not in FIT:
        return Fit(prior.decode_eff, prior.layer_us, prior.kv_factor, fit.prefill_eff_quant, fit.prefill_eff_float,
                   fit.prefill_layer_us)
    return fit


def published_peak(dev: Device, quant: str | None) -> float | None:
    """The datasheet peak prefill is measured against: int8 TOPS for integer-quantized weights on NVIDIA (Pascal 6.1:
    the __dp4a rate), fp32 TFLOPS for weights multiplied in F32 where the catalog gives that figure, dense fp16 TFLOPS
    otherwise (None when the catalog has no figure)."""
    if not is_float_quant(quant) and device_class(dev).startswith("nvidia") and dev.int8_tops:
        return dev.int8_tops
    if (quant or "").upper() == "F32" and dev.fp32_tflops:     # cuBLAS in F32 (Maxwell, Pascal 6.1: nvidia_peak.py)
        return dev.fp32_tflops
    return dev.fp16_tflops


def peak_shares(dev: Device, quant: str | None, backend: str | None = "cuda", ggml: bool = True) -> PeakShares:
    """The shares of the datasheet peak (published_peak) a plan reaches (``ggml``: a llama.cpp / Ollama plan; the rest
    borrow llama.cpp's F16 path): hardware/nvidia_peak.py's mma.sync share, F16-path factor and clock share."""
    return PeakShares(mma_sync_share(dev, is_float_quant(quant), backend),
                      fp16_accumulate_factor(dev, *borrowed_f16_path(quant, backend, ggml, is_float_quant(quant))),
                      clock_share(dev, POWER_KNEE_W_PER_TOPS, POWER_KNEE_FLOOR))


def reachable_peak(dev: Device, quant: str | None, backend: str | None = "cuda", ggml: bool = True,
                   shares: PeakShares | None = None) -> float | None:
    """The datasheet peak (published_peak) × its shares (peak_shares, unless given)."""
    peak = published_peak(dev, quant)
    if not peak:
        return None
    s = shares or peak_shares(dev, quant, backend, ggml)
    return peak * s.mma_sync * s.f16 * s.clock


def apple_generation(dev: Device) -> str | None:
    """"m3" for an M3 / M3 Pro / M3 Max / M3 Ultra entry (the catalog family's first part); None off Apple."""
    if device_class(dev) != "apple":
        return None
    m = re.match(r"(m\d+)\b", dev.family or dev.id)
    return m.group(1) if m else None


def core_peak(dev: Device, cores: int | None = None) -> float | None:
    """An Apple M3+ chip's fp16-equivalent peak: its GPU cores × its generation's fitted per-core rate."""
    gen = apple_generation(dev)
    rate = APPLE_CORE_TFLOPS.get(gen or "")
    cores = cores or dev.gpu_cores
    return cores * rate if rate and cores else None


def prefill_peak(dev: Device, quant: str | None, backend: str | None = "cuda", ggml: bool = True,
                 shares: PeakShares | None = None) -> float | None:
    """Peak TFLOPS/TOPS prefill is measured against: the datasheet figure at the share llama.cpp's kernels reach
    (reachable_peak), or for Apple M3 and later (no published figure) GPU cores × the generation's measured per-core
    rate; None when neither is known."""
    return reachable_peak(dev, quant, backend, ggml, shares) or core_peak(dev)


def prefill_eff(fit: Fit, quant: str | None) -> float | None:
    eff = fit.prefill_eff_float if is_float_quant(quant) else fit.prefill_eff_quant
    return eff or fit.prefill_eff_quant or fit.prefill_eff_float


# --- the model ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """What one token reads on one device (or one tensor-parallel group) and the constants that apply."""

    weight_bytes: float
    kv_bytes: float
    bandwidth_gbs: float | None
    fit: Fit
    n_layers: float = 0.0          # layers this device runs per token
    tp: int = 1                    # devices sharing each layer (tensor parallel)
    extra_layers: float = 0.0      # on a GPU, the recurrent layers' extra kernels as layers' fixed cost (recurrent_speed.py)
    device: int = -1               # its index in the allocation's devices (-1: a tensor-parallel group), for --explain


def decode_seconds(parts: list[Part]) -> float | None:
    """Seconds per generated token: parts run one after another and their times add."""
    t = 0.0
    used = [p for p in parts if p.weight_bytes or p.kv_bytes]
    for p in used:
        if not p.bandwidth_gbs:
            return None
        speedup = p.tp * TP_EFFICIENCY if p.tp > 1 else 1.0
        f = p.fit
        t += (p.weight_bytes + f.kv_factor * p.kv_bytes) / (f.decode_eff * p.bandwidth_gbs * 1e9 * speedup)
        t += (p.n_layers + p.extra_layers) * f.layer_us / 1e6
        if p.tp > 1:
            t += p.n_layers * 2 * TP_ALLREDUCE_US / 1e6
    if not used:
        return None
    return t + max(0, len(used) - 1) * SPLIT_OVERHEAD_MS / 1e3


def decode_speed(parts: list[Part]) -> float | None:
    s = decode_seconds(parts)
    return 1.0 / s if s else None


def prefill_speed(*, flops_per_token: float, peak_tflops: float | None, eff: float | None,
                  cpu_weight_bytes: float = 0.0, pcie: str | None = None, tp: int = 1,
                  pageable: bool = False, host_flops_per_token: float = 0.0,
                  n_layers: float = 0.0, layer_us: float = 0.0, ubatch: int = UBATCH,
                  attn_seconds: float = 0.0) -> float | None:
    """Prompt tokens/s: the GPU's FLOPs per token at ``eff`` × ``peak_tflops`` plus ``layer_us`` per layer (the fixed
    cost a prompt token pays in each of ``n_layers`` layers: Fit.prefill_layer_us) plus ``attn_seconds`` (the attention
    priced apart: fa_prefill.py's flash-attention kernel, outside ``flops_per_token``); weights in RAM add one copy to the
    GPU per UBATCH tokens, at the link's rate or a pageable copy's (``pageable``: llama.cpp's mmap'd weights); the
    matmuls left on the CPU (``host_flops_per_token``: --no-host's repacked weights) add their time at
    HOST_REPACKED_GEMM_GFLOPS."""
    if not peak_tflops or not eff:
        return None
    speedup = tp * TP_EFFICIENCY if tp > 1 else 1.0
    t = (flops_per_token / (eff * peak_tflops * 1e12) + attn_seconds) / speedup + n_layers * layer_us / 1e6
    if cpu_weight_bytes:
        t += cpu_weight_bytes / (host_link_gbs(pcie, pageable) * 1e9 * ubatch)
    t += host_flops_per_token / (HOST_REPACKED_GEMM_GFLOPS * 1e9)
    return 1.0 / t if t > 0 else None


def cpu_prefill_speed(flops_per_token: float, cores: int = CPU_CORES) -> float | None:
    return CPU_FLOPS_PER_CORE * cores / flops_per_token if flops_per_token > 0 else None   # no matmul weights


@dataclass(frozen=True)
class SpeedEstimate:
    decode_tokens_per_s: float | None
    prefill_tokens_per_s: float | None
    formula: str


def predict(model: ModelSpec, weight_bytes: float, dev: Device, *, quant: str | None = None,
            backend: str | None = None, ctx: float = 0.0, prompt: int = 0, prompt_depth: int = 0,
            n_devices: int = 1, split: str = "layer", cache_type: str = "f16", flash_attn: bool = True) -> SpeedEstimate:
    """Decode with ``ctx`` tokens cached and prefill of a ``prompt``-token prompt after ``prompt_depth``
    cached tokens, all weights on ``n_devices`` copies of ``dev`` split by layer or by tensor; llama.cpp's kernels,
    flash attention as ``flash_attn`` (its default, -fa auto, turns it on for CUDA)."""
    klass = device_class(dev)
    backend = backend or default_backend(dev, klass)
    fit = constants(klass, backend, backend_variant(dev, backend))
    # a recurrent layer's state, moved as llama.cpp's current graph does on this backend (recurrent_speed.py)
    w = weight_bytes * read_fraction(model, quant) + recurrent_state_traffic(model, backend=backend)
    kv = kv_bytes(model, int(ctx), cache_type, cache_type)
    rec = extra_layers(model) if klass != "cpu" else 0.0     # the recurrent layers' extra kernels, on a GPU
    if split == "tensor" and n_devices > 1:
        parts = [Part(w, kv, dev.bandwidth_gbs, fit, model.n_layers, tp=n_devices, extra_layers=rec)]
    else:
        parts = [Part(w / n_devices, kv / n_devices, dev.bandwidth_gbs, fit, model.n_layers / n_devices,
                      extra_layers=rec / n_devices) for _ in range(n_devices)]
    decode = decode_speed(parts)
    prefill = None
    types = routed_expert_types(model, quant) if model.n_experts and backend == "rocm" else None
    if prompt and not moe_prefill_gap(model.n_experts, backend, gfx_target=dev.gfx_target, quant=quant,
                                      ubatch=min(prompt, UBATCH), expert_types=types,
                                      compute_capability=dev.compute_capability) \
            and not tensor_core_gap(dev, backend, True):
        attn, fa = prompt_attention(model, GPUPlace(dev, klass, backend, True), "on" if flash_attn else "off",
                                    prompt_depth + prompt / 2)
        flops = prefill_matmul_flops(model, dev, quant, backend, min(prompt, UBATCH)) + attn
        quant = prompt_matmul_type(quant, True, dev, backend, min(prompt, UBATCH))     # MMQ or cuBLAS (nvidia_peak)
        prefill = prefill_speed(flops_per_token=flops, peak_tflops=prefill_peak(dev, quant, backend),
                                eff=prefill_eff(fit, quant), tp=n_devices if split == "tensor" else 1,
                                n_layers=model.n_layers, layer_us=fit.prefill_layer_us,
                                attn_seconds=fa.seconds_per_token if fa else 0.0)
        prefill = with_scan(prefill, scan_seconds(model, dev.bandwidth_gbs))    # the recurrent layers' token scan
    return SpeedEstimate(decode, prefill, f"{klass}/{backend}: {fit}")


@dataclass(frozen=True)
class GPUPlace:
    """The first GPU of an allocation, as the speed model classes it."""
    dev: Device | None
    klass: str
    backend: str
    ggml: bool = False      # a llama.cpp / Ollama plan: ggml's kernels (MMQ tiles, mma.sync, per-layer cost) apply


@dataclass(frozen=True)
class SpeedPlan:
    """Everything the speed figures and their explain steps are made from."""
    ctx: int
    parts: tuple[Part, ...]
    decode: float | None
    decode_short: float | None
    short_ctx: int
    prompt: int
    flops: float                        # prefill FLOPs per token
    cpu_weights: float                  # weight bytes in RAM (cross PCIe per micro-batch in prefill)
    first_gpu: GPUPlace | None
    peak: float | None
    eff: float | None
    prefill: float | None
    pageable: bool = False              # host weights mmap'd: copied at PAGEABLE_H2D_GBS
    prefill_note: str | None = None     # why no prefill is predicted (hardware/backend_speed.py)
    host_flops: float = 0.0             # prefill FLOPs per token left on the CPU (--no-host's repacked weights)
    n_layers: int = 0                   # layers a prompt token passes through …
    layer_us: float = 0.0               # … at this fixed cost each (Fit.prefill_layer_us)
    expert_factor: float = 1.0          # routed experts' FLOPs × this (backend_speed.expert_tile_factor)
    ubatch: int = UBATCH                # the micro-batch host weights cross the link for, and the tiles are cut for
    peak_shares: PeakShares = PeakShares()  # the shares of the datasheet peak in ``peak`` (peak_shares)
    quant: str | None = None            # the weights' type (which datasheet peak, the F16 path: hardware/nvidia_peak.py)
    ubatch_term: UbatchTerm | None = None  # the micro-batch's MMQ launches vs 512's (hardware/ubatch_speed.py)
    state_traffic: float = 0.0          # decode: bytes a token moves through recurrent layers' states (recurrent_speed.py)
    state_words: str = ""               # … in words, for --explain
    score_bytes: float = 0.0            # of the KV read: flash attention off, the F32 scores' passes (build_era.py)
    read_bound: bool = False            # prefill held to the weights' read per micro-batch (weight_read_floor)
    fa_attention: FaAttention | None = None  # the attention priced as the CUDA FlashAttention kernel (fa_prefill.py)
    recurrent_notes: tuple = ()         # the recurrent kernels' and scan's --explain steps (recurrent_speed.py)
    kernel_path: str = ""               # words where ggml-cuda's MMQ rule sends the batch to cuBLAS (backend_speed.py)
    fa_off: FOP.FaOffAttention | None = None    # -fa off on CUDA: the unfused graph's attention (fa_off_prefill.py)
    moe_range: tuple | None = None      # no MoE prompt figure: (the unvalidated figure, its MoePrefillRange)
    link_range: tuple[float, float] | None = None   # host weights copied from mmap'd memory: (low, high) tokens/s

    @property
    def ttft_s(self) -> float | None:
        """Seconds to the first token of a ``prompt``-token prompt from an empty cache: the prompt at the prefill rate
        (its last micro-batch's logits give the first token, llama-server's time to first token); None unpredicted."""
        return time_to_first_token(self.prompt, self.prefill)


def _catalog_device(t) -> Device | None:
    from .catalog import find_device

    if t is None:
        return None
    try:
        return find_device(t.name.split(" #")[0])
    except ValueError:
        return None


def device_parts(model: ModelSpec, alloc, targets: list, default_ram_gbs: float, reads: WeightReads,
                 kv_read: float, scores: float = 0.0, state: float = 0.0,
                 quant: str | None = None) -> tuple[list[Part], GPUPlace | None, float]:
    """One Part per device a token reads from (a tensor-parallel group as one), GPUs first; the first GPU; the score
    bytes counted. ``scores``: the F32 attention scores' bytes a token moves with flash attention off
    (build_era.score_bytes), counted only on a device whose KV factor is the flash-attention one (a factor fitted on
    older builds, which ran without flash attention, holds them already), each device its share of the KV. ``state``:
    the bytes a token moves through the recurrent layers' states (planned_state), moved by the device holding each."""
    s = alloc.settings
    frac = rest_read_fraction(model, quant)      # in bytes at each tensor's type where known (token_work.py)
    ggml_backend = planned_backend(alloc)
    # llama.cpp's kernels, not vLLM's
    rec_share = extra_layers(model, planned_gdn_path(alloc)) / model.n_layers if ggml_backend else 0.0
    total_kv = sum(d.kv_cache for d in reads.used) or 1
    gpu_targets = [t for t in targets if t.kind != "cpu"]
    cpu_target = next((t for t in targets if t.kind == "cpu"), None)
    ram_bw = cpu_target.bandwidth_gbs if cpu_target and cpu_target.bandwidth_gbs else default_ram_gbs
    parts: list[Part] = []
    gpu_parts: list[Part] = []
    first_gpu: GPUPlace | None = None
    gpu_idx = 0
    counted = 0.0
    for d in reads.used:
        # the fixed per-layer cost is fitted per layer-equivalent: n_layers × the device's share of the matmul bytes
        layers = model.n_layers * reads.matmul_bytes(d) / max(1.0, reads.total_weights - reads.embed)
        kv = kv_read * d.kv_cache / total_kv
        own = reads.matmul_bytes(d) * frac + state * layers / model.n_layers
        at = next((i for i, x in enumerate(alloc.devices) if x is d), -1)
        if d.kind == "cpu":
            parts.append(Part(own, kv, ram_bw, CPU, layers, device=at))
            continue
        t = next((t for t in gpu_targets if t.name == d.name), None)
        if t is None and gpu_idx < len(gpu_targets):
            t = gpu_targets[gpu_idx]
        gpu_idx += 1
        dev = _catalog_device(t)
        klass = device_class(dev, t.kind if t else d.kind)
        backend = engine(s.runtime).speed_backend or default_backend(dev, klass)
        bw = (t.bandwidth_gbs if t else None) or (dev.bandwidth_gbs if dev else None)
        if ggml_backend:        # llama.cpp / Ollama: the backend planned (--backend or the vendor's)
            backend = ggml_backend
        first_gpu = first_gpu or GPUPlace(dev, klass, backend, ggml_backend is not None)
        fit = flash_attention_fit(constants(klass, backend, backend_variant(dev, backend)), backend,
                                  ggml_backend is not None, s.llamacpp.flash_attn)
        share = scores * d.kv_cache / total_kv if fit.kv_factor == FA_KV_FACTOR else 0.0
        counted += share
        gpu_parts.append(Part(own, kv + share, bw, fit, layers, extra_layers=layers * rec_share, device=at))
    if s.tp > 1 and gpu_parts:      # tensor parallel: every device reads 1/tp of each layer at once
        # each layer's all-reduce waits for every rank, so a step takes the slowest rank's read: mixed cards are
        # priced at the lowest fitted share × bandwidth (an unknown bandwidth: unpriced)
        p0 = min(gpu_parts, key=lambda p: p.fit.decode_eff * p.bandwidth_gbs if p.bandwidth_gbs else -1.0)
        gpu_parts = [Part(sum(p.weight_bytes for p in gpu_parts), sum(p.kv_bytes for p in gpu_parts),
                          p0.bandwidth_gbs, p0.fit, model.n_layers, tp=s.tp,
                          extra_layers=sum(p.extra_layers for p in gpu_parts))]
    return gpu_parts + parts, first_gpu, counted


def weight_read_floor(prefill: float | None, prompt: int, ubatch: int, gpu_parts: list[Part]) -> float | None:
    """The prompt rate no faster than the weights can be read: each micro-batch of ``ubatch`` tokens reads every GPU
    weight once (a batch of ≤ 8 tokens even runs the decode kernel: ggml-cuda mmvq.cuh MMVQ_MAX_BATCH_SIZE), so ``prompt``
    tokens take at least ceil(prompt / ubatch) weight reads, each a decode step's without the KV. Binds only for a
    prompt of a few tokens, where the compute-bound rate alone would beat decoding."""
    if not prefill or not gpu_parts or prompt <= 0:
        return prefill
    read = decode_seconds([Part(q.weight_bytes, 0.0, q.bandwidth_gbs, q.fit, q.n_layers, tp=q.tp) for q in gpu_parts])
    if not read:
        return prefill
    return min(prefill, prompt / (-(-prompt // max(1, ubatch)) * read))


def short_decode(parts: list[Part], ctx: int) -> tuple[int, float | None]:
    """The scoreboard figure: one request, a short prompt (llama-bench's tg128 after pp512), KV read ≈ 512 tokens:
    (that context, its decode speed)."""
    short_ctx = min(ctx // 2, SHORT_CONTEXT) if ctx else SHORT_CONTEXT
    short_scale = short_ctx / (ctx // 2) if ctx // 2 else 0.0
    return short_ctx, decode_speed([replace(p, kv_bytes=p.kv_bytes * short_scale) for p in parts])


def prompt_attention(model: ModelSpec, gpu: GPUPlace | None, flash_attn: str,
                     ctx: float, runtime: str = "llama.cpp") -> tuple[float, FaAttention | None]:
    """A prompt token's attention over ``ctx`` cached tokens: (its FLOPs at ATTN_FACTOR, to add to the matmuls', and
    None), or (0.0 and its FlashAttention kernel term) where llama.cpp runs it as the CUDA MMA kernel (fa_prefill.py);
    a runtime with no prompt record of its own borrows llama.cpp's CUDA path (nvidia_peak.borrowed_f16_path), this
    term with it."""
    dev = gpu.dev if gpu else None
    backend = (gpu.backend if gpu.ggml else "cuda") if gpu else None
    # llama.cpp's -fa is not another runtime's: vLLM and SGLang run FlashAttention kernels by default
    on = flash_attn != "off" or (gpu is not None and not gpu.ggml)
    if dev is not None and fa_mma_applies(dev, backend, True, on):
        clock = clock_share(dev, POWER_KNEE_W_PER_TOPS, POWER_KNEE_FLOOR)
        term = fa_attention(model, dev, ctx, clock, FA_MMA_EFF)
        return 0.0, (term if gpu is None or gpu.ggml else replace(term, borrowed_by=runtime))
    return ATTN_FACTOR * attention_flops_per_token(model, ctx), None


def flash_attention_fit(fit: Fit, backend: str | None, ggml: bool, flash_attn: str) -> Fit:
    """A llama.cpp / Ollama CUDA or Vulkan plan with flash attention on (-fa auto's choice in current builds) reads a
    cached K and V row once per layer (build_era.py: KV factor 1, derived, not fitted), also where the entry's factor was
    fitted without flash attention (HBM cards: 4.2) or inherited (AMD, Strix Halo on Vulkan: 3.2); on CUDA with it off,
    the same read plus fa_off_decode.py's bytes. Metal keeps its fitted factor (build_era.py; metal_kv.py not applied)."""
    on = flash_attn != "off" or (backend == "cuda" and FOD.APPLIED)
    if ggml and backend in FA_DERIVED_BACKENDS and on and fit.kv_factor != FA_KV_FACTOR:
        return replace(fit, kv_factor=FA_KV_FACTOR)
    return fit


def mmapped_host_weights(alloc) -> bool:
    """llama.cpp / Ollama with mmap on (the default): host weights are pageable (CPU_Mapped), see PAGEABLE_H2D_GBS."""
    return planned_backend(alloc) is not None and alloc.settings.llamacpp.mmap


def planned_backend(alloc) -> str | None:
    """The ggml backend a llama.cpp / Ollama allocation was planned for (its "backend" step, runtimes/backends.py:
    --backend or the GPU vendor's), so --backend vulkan reads the Vulkan constants; None for other runtimes."""
    value = step_value(alloc, "backend")
    return value if value in DEFAULT_BACKEND.values() else None


def step_value(alloc, label: str) -> str | None:
    """The value of the allocation's step named ``label`` (what the planner decided and --explain shows), or None."""
    return next((st.value for st in alloc.steps if st.label == label), None)


def planned_build(alloc) -> int | None:
    """The llama.cpp build an allocation's graph is counted at: the one named (its "llama.cpp build" step: llama.cpp==bN,
    or for ollama==X its LLAMA_CPP_VERSION or vendored commit's build, runtimes/versions.py ollama_speed_build); else
    for Ollama the newest release's; None for unversioned llama.cpp (the modelled build) and other runtimes."""
    from ..runtimes.versions import ollama_current_build

    if (named := step_value(alloc, "llama.cpp build")) is not None:
        return int(named[1:])
    return ollama_current_build() if engine(alloc.settings.runtime).pinned_llama_cpp else None


def planned_state(model: ModelSpec, alloc) -> tuple[float, str]:
    """The bytes a decoded token moves through the recurrent layers' states as the planned build and backend's graph
    moves them, and --explain's words for them (recurrent_speed.py)."""
    gdn, backend, build = planned_gdn_path(alloc), planned_backend(alloc), planned_build(alloc)
    state = recurrent_state_traffic(model, gdn, backend=backend, build=build)
    return state, state_traffic_words(model, state, gdn, backend=backend, build=build)


def planned_gdn_path(alloc) -> str:
    """The one-token delta-net graph of the planned build (its "delta nets" step, runtimes/llamacpp.py; the same rule
    the memory side simulates): "unfused" for builds before b8100, the fused graph otherwise (recurrent_speed.py)."""
    return "unfused" if step_value(alloc, "delta nets") == "unfused" else PLANNED_GDN_PATH


def prompt_path(quant: str | None, place: GPUPlace, ubatch: int) -> tuple[str | None, str]:
    """The weights' type as the prompt's matmuls see them (nvidia_peak.prompt_matmul_type: vLLM's AWQ multiplies in
    fp16; so does ggml-cuda where its MMQ rule sends the batch to cuBLAS) and --explain's words on that path."""
    dev = place.dev
    words = nvidia_kernel_words(dev.compute_capability, quant, ubatch) if dev and place.ggml and place.backend == "cuda" \
        else ""
    return prompt_matmul_type(quant, place.ggml, dev, place.backend, ubatch), words


def prompt_gap(model: ModelSpec, place: GPUPlace, quant: str | None, ubatch: int, alloc) -> str | None:
    """Why a plan's prompt is not predicted on its first GPU: a GTX 16xx's tensor-core kernels without tensor cores
    (nvidia_peak.tensor_core_gap), else a MoE prompt's gap (moe_prompt_gap); None where it is predicted."""
    return (tensor_core_gap(place.dev, place.backend, place.ggml) or moe_prompt_gap(model, place, quant, ubatch, alloc)
            or soc_cuda_gap(place.dev, place.klass, f"{place.klass}/cuda" in FIT, is_float_quant(quant), place.ggml))


def moe_prompt_gap(model: ModelSpec, place: GPUPlace, quant: str | None, ubatch: int, alloc) -> str | None:
    """Why a plan's MoE prompt is not predicted on its first GPU's backend (backend_speed.moe_prefill_gap: SYCL, Vulkan,
    and ROCm where the planned build sends the experts to the per-expert fallback); None where it is."""
    types = routed_expert_types(model, quant) if model.n_experts and place.backend == "rocm" else None
    return moe_prefill_gap(model.n_experts, place.backend, gfx_target=place.dev.gfx_target if place.dev else None,
                           quant=quant, ubatch=ubatch, build=planned_build(alloc), expert_types=types,
                           compute_capability=place.dev.compute_capability if place.dev else None,
                           vendor=place.dev.vendor if place.dev else None)


def prefill_gaps(model: ModelSpec, place: GPUPlace, weights: str | None, ubatch: int, alloc, prefill: float | None,
                 link: tuple[float, float] | None) -> tuple[float | None, str | None, tuple | None, tuple | None]:
    """(the prompt figure a plan prints, why none, the MoE range's priced figure, the host-link range): a MoE prompt
    with no validated figure on its backend (prompt_gap) prints the range around its priced figure
    (backend_speed.MOE_PREFILL_RANGES); else weights in RAM copied from mmap'd memory print ``link``, the range
    between the one measured pageable rate and the link's (host_link.pageable_range, review22 #3)."""
    dev = place.dev
    note = prompt_gap(model, place, weights, ubatch, alloc)
    if note:
        priced = (prefill, moe_prefill_range(place.backend, dev.vendor if dev else None)) \
            if prefill and not tensor_core_gap(dev, place.backend, place.ggml) else None
        return None, note, priced, None
    if link:
        return None, PAGEABLE_NOTE, None, link
    return prefill, None, None, None


def recurrent_notes(model: ModelSpec, parts: list[Part], first_gpu: GPUPlace | None, prefill_counted: bool) -> tuple:
    """The --explain steps of the recurrent kernels (priced at the GPU part's layer_us) and the scan (at the first GPU's
    bandwidth, counted when a GPU prompt rate was)."""
    gpu_extra = (sum(q.extra_layers for q in parts), sum(q.extra_layers * q.fit.layer_us for q in parts))
    bandwidth = first_gpu.dev.bandwidth_gbs if first_gpu and first_gpu.dev else None
    return explain_notes(model, gpu_extra, bandwidth, prefill_counted, first_gpu is None or first_gpu.ggml)


def speed_plan(model: ModelSpec, quant: str | None, alloc, targets: list, default_ram_gbs: float) -> SpeedPlan:
    s = alloc.settings
    ctx = s.ctx or 0
    try:
        kv_read = float(kv_bytes(model, ctx // 2, s.cache_type_k, s.cache_type_v))
    except (ValueError, KeyError):
        kv_read = float(alloc.kv_bytes_per_token * (ctx // 2))
    scores = FOD.plan_bytes(model, ctx // 2, kv_read, s.llamacpp)     # -fa off: scores, K/V re-reads (fa_off_decode.py)
    reads = weight_reads(model, alloc, quant)
    state, state_words = planned_state(model, alloc)
    parts, first_gpu, scores = device_parts(model, alloc, targets, default_ram_gbs, reads, kv_read, scores, state, quant)
    decode = decode_speed(parts)
    short_ctx, decode_short = short_decode(parts, ctx)

    prompt = s.prompt_tokens      # --prompt-tokens (512, llama-bench's pp512, unless asked): its attention at mean depth N/2
    attn, fa = prompt_attention(model, first_gpu, s.llamacpp.flash_attn, prompt / 2, s.runtime)
    dense_flops = 2 * active_matmul_params(model) + attn
    flops = dense_flops
    cpu_weights = sum(reads.matmul_bytes(d) for d in reads.used if d.kind == "cpu")
    pageable = mmapped_host_weights(alloc)
    peak = eff = None
    shares = PeakShares()
    host_flops = layer_us = 0.0
    # MMQ's expert tiles are llama.cpp's own (a llama.cpp / Ollama plan only). The rest of the prefill model (the peak at
    # the share llama.cpp's kernels reach, the efficiency and per-layer cost fitted together on llama-bench rows) is what
    # a runtime with no prefill records of its own (transformers, vLLM, SGLang) borrows: llama.cpp's dense rate on the card
    kernels = first_gpu.backend if first_gpu and first_gpu.ggml else None
    ubatch = min(prompt, s.llamacpp.ubatch or UBATCH)
    factor, ub_term, read_bound, off = 1.0, None, False, FOP.plan_term(model, None, s.llamacpp, prompt, ubatch, 0.0, {}, None)
    priced = None
    if first_gpu:
        dev = first_gpu.dev
        # on the GPU an expert matmul costs its padded tiles (expert_factor); the CPU's share below does not
        factor = expert_factor(model, dev, quant, kernels, ubatch)
        flops = dense_flops + padding_flops(model, factor)
        repack = alloc.host_repacked
        if repack is not None:      # --no-host: repacked weights stay on the CPU, neither copied nor multiplied there
            cpu_weights = max(0.0, cpu_weights - repack.bytes)
            host_flops = min(2.0 * repack.cpu_matmul_params, dense_flops)
            # the padding goes with the experts the CPU multiplies, not with its attention or dense weights
            flops -= (flops - dense_flops) * min(1.0, repack.cpu_expert_params / max(1.0, routed_expert_params(model)))
        fit = constants(first_gpu.klass, first_gpu.backend, backend_variant(dev, first_gpu.backend))
        # an architecture the current builds' prompt rate was not fitted on keeps the 2024 builds' (build_era.py)
        fit = prefill_entry(f"{first_gpu.klass}/{first_gpu.backend}", dev.compute_capability if dev else None,
                            FIT) or fit
        weights, (quant, path) = quant, prompt_path(quant, first_gpu, ubatch)     # MMQ, or fp16 (AWQ, cuBLAS)
        shares = peak_shares(dev, quant, first_gpu.backend, first_gpu.ggml) if dev else shares
        peak = prefill_peak(dev, quant, first_gpu.backend, first_gpu.ggml, shares) if dev else None
        eff = prefill_eff(fit, quant)
        layer_us = fit.prefill_layer_us     # every layer runs on the GPU in a prompt batch, host weights' ones too
        off = FOP.plan_term(model, first_gpu, s.llamacpp, prompt, ubatch, fit.decode_eff, POWER_KNEE_W_PER_TOPS, POWER_KNEE_FLOOR)
        flops -= attn if off else 0.0       # -fa off on CUDA: the unfused graph's time instead (fa_off_prefill.py)
        prefill = prefill_speed(flops_per_token=flops - host_flops, peak_tflops=peak, eff=eff,
                                cpu_weight_bytes=cpu_weights, pcie=dev.pcie if dev else None, tp=s.tp,
                                pageable=pageable, host_flops_per_token=host_flops,
                                n_layers=model.n_layers, layer_us=layer_us, ubatch=ubatch,
                                attn_seconds=sum(t.seconds_per_token for t in (fa, off) if t))
        ub_term = plan_term(model, dev, not is_float_quant(quant), first_gpu.backend, first_gpu.ggml, ubatch,
                            (peak or 0.0) * (eff or 0.0) * 1e12)
        # llama.cpp's token-by-token scan (Ollama runs llama-server since v0.30); vLLM / SGLang's chunked kernels: unpriced
        scan_bw = dev.bandwidth_gbs if dev and first_gpu.ggml else None
        prefill = with_scan(with_term(prefill, ub_term), scan_seconds(model, scan_bw))
        floored = weight_read_floor(prefill, prompt, ubatch, [q for q in parts if q.fit is not CPU])
        read_bound = floored is not None and prefill is not None and floored < prefill
        prefill = floored
        link = pageable_range(prefill, cpu_weights, ubatch, dev.pcie if dev else None) if pageable and not read_bound else None
        prefill, note, priced, link = prefill_gaps(model, first_gpu, weights, ubatch, alloc, prefill, link)
    else:
        prefill, note, link = (cpu_prefill_speed(flops) if reads.used else None), None, None
    if ctx and prompt > ctx:        # the context a plan settled on (--fit may cut it) cannot hold the prompt
        prefill, note, priced, link = None, prompt_over_context(prompt, ctx), None, None
    notes = recurrent_notes(model, parts, first_gpu, bool(prefill) and bool(first_gpu and first_gpu.ggml))
    return SpeedPlan(ctx, tuple(parts), decode, decode_short, short_ctx, prompt, flops, cpu_weights, first_gpu,
                     peak, eff, prefill, pageable, note, host_flops, model.n_layers, layer_us, factor, ubatch, shares,
                     quant, ub_term, state, state_words, scores,
                     read_bound, fa, notes, path if first_gpu else "", off,
                     priced if priced and priced[1] else None, link)
