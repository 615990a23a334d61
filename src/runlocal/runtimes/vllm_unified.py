"""vLLM on an NVIDIA unified-memory device (DGX Spark / GB10, Jetson): the budget is a share of CUDA's *total*, and
vLLM refuses to start when less than that share is free (review22 finding 1).

vLLM sizes its budget as ``requested_memory = math.ceil(total_memory × gpu_memory_utilization)`` and stops at start-up
when the memory free is below it (v0.33.0 vllm/v1/worker/utils.py request_memory; v0.10.2 gpu_worker.py init_device):

    Free memory on device {device} ({free}/{total} GiB) on startup is less than desired GPU memory utilization
    ({utilization}, {requested} GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.

On a discrete card runlocal plans on CUDA's total (devices.json ``cuda_total_gib``), so the two agree. On a unified
device the catalog's capacity is the share of RAM the GPU may have free (``gpu_memory_share``: 0.79 × 128 GiB on a
DGX Spark, at most what vLLM's own check read free on fresh boots), while CUDA reports the RAM Linux sees as its total
(121.69 GiB on a GB10). From v0.20.0 vLLM reads "free" there as psutil's available memory (vllm/utils/mem_utils.py
MemorySnapshot.measure, ``current_platform.is_integrated_gpu``); the OS and the page cache hold the rest either way.
So the default 0.92 asks for 0.92 × 121.69 = 111.95 GiB and stops when 101.12 GiB is free; the largest fraction that
starts is ⌊free / total⌋ to two decimals, and its budget is larger than the old free-share × 0.92 one.
"""

from __future__ import annotations

import math
import re

from ..units import GiB
from .base import Step, Target

# The first release known to carry the check: issue #20305 reports "Free memory on device … on startup is less than
# desired GPU memory utilization" on v0.9.1; the 0.8.5 wheel's gpu_worker.py has none (0.9.0 not read)
FREE_CHECK_FROM = (0, 9, 1)
DEVICE = "cuda:0"          # torch.device as vLLM's MemorySnapshot names the first GPU


def _device(gpu: Target):
    """The catalog entry of an NVIDIA unified-memory device the plan names, None for any other target."""
    if gpu.kind != "unified":
        return None
    from ..hardware.catalog import load_devices

    name = re.sub(r" #\d+$", "", gpu.name)
    return next((d for d in load_devices() if d.name == name and d.vendor == "nvidia" and d.unified_memory), None)


def cuda_total(gpu: Target) -> tuple[int, str, str] | None:
    """CUDA's total memory on an NVIDIA unified device, in words, and its source; the marketed size where the catalog
    cites none (vLLM then asks for a little more than it would: the refusal may come a little early)."""
    dev = _device(gpu)
    if dev is None:
        return None
    if dev.cuda_total_bytes:
        return (dev.cuda_total_bytes, f"CUDA's total, {dev.cuda_total_bytes / GiB:.2f} GiB on {dev.name}",
                dev.cuda_total_source or "")
    return (dev.memory_bytes, f"{dev.name}'s marketed {dev.memory_gib:g} GiB (no CUDA total is cited for it; CUDA's "
            "is a few percent less)", "")


def budget_base(gpu: Target) -> int:
    """What vLLM multiplies --gpu-memory-utilization by: CUDA's total on a unified NVIDIA device, else the card's
    capacity (a discrete card's is already CUDA's total)."""
    total = cuda_total(gpu)
    return total[0] if total else gpu.capacity


def largest_share(gpu: Target) -> float | None:
    """The largest --gpu-memory-utilization, to two decimals, whose request the free memory covers."""
    total = cuda_total(gpu)
    return math.floor(gpu.capacity / total[0] * 100) / 100 if total else None


def _free_words(gpu: Target, total_source: str) -> str:
    """Which free figure the plan assumes, and its source (said once where the total's is the same)."""
    dev = _device(gpu)
    assert dev is not None
    if gpu.capacity != dev.gpu_usable_bytes:
        return "as --vram gives it"
    if dev.share_source:
        from ..hardware.catalog import load_sources

        source = load_sources().get(dev.share_source, dev.share_source)
        return (f"runlocal's figure for it, {dev.gpu_memory_share:g} × {dev.memory_gib:g} GiB, "
                + ("both from " if source == total_source else f"from {source}; the total from ")
                + (total_source or "the catalog"))
    from ..hardware.catalog import DEFAULT_UNIFIED_SHARE

    return (f"runlocal's assumed {DEFAULT_UNIFIED_SHARE:g} × {dev.memory_gib:g} GiB, not measured on this device "
            "(set --vram to what is free)" + (f"; the total from {total_source}" if total_source else ""))


def start_refusal(gpu: Target, utilization: float, release: tuple[int, ...] | None) -> str | None:
    """vLLM's start-up refusal, in its words, where utilization × CUDA's total exceeds the free memory planned; the
    largest fraction that starts and what it leaves the budget. None where it starts, on another device, or on a
    release before the check."""
    total = cuda_total(gpu)
    if total is None or (release is not None and release < FREE_CHECK_FROM):
        return None
    requested = math.ceil(total[0] * utilization)
    if requested <= gpu.capacity:
        return None
    fits = largest_share(gpu)
    fix = (f"--gpu-memory-utilization {fits:.2f} starts: {fits:.2f} × {total[0] / GiB:.2f} = "
           f"{fits * total[0] / GiB:.2f} GiB ≤ {gpu.capacity / GiB:.2f} GiB" if fits and fits > 0 else
           "no fraction starts")
    return (f"Free memory on device {DEVICE} ({round(gpu.capacity / GiB, 2)}/{round(total[0] / GiB, 2)} GiB) on startup "
            f"is less than desired GPU memory utilization ({utilization:g}, {round(requested / GiB, 2)} GiB) "
            f"(vLLM refuses to start: the fraction is of {total[1]}, while {gpu.capacity / GiB:.2f} GiB is free, "
            f"{_free_words(gpu, total[2])}; the OS and page cache hold the rest of the unified memory. {fix})")


def budget_step(gpu: Target, utilization: float, budget: int) -> Step:
    """The --explain step of the budget, naming what the fraction multiplies."""
    total = cuda_total(gpu)
    if total is None:
        return Step("budget", f"{gpu.capacity:,} B × gpu_memory_utilization {utilization}", f"{budget:,} B",
                    "vllm/v1/worker/gpu_worker.py determine_available_memory")
    return Step("budget", f"{total[0]:,} B ({total[1]}, not the {gpu.capacity:,} B planned free) × "
                f"gpu_memory_utilization {utilization}", f"{budget:,} B",
                "vllm/v1/worker/utils.py request_memory: math.ceil(total_memory × gpu_memory_utilization)")


def starting_share(planner, targets: list[Target]) -> float | None:
    """The --gpu-memory-utilization a vLLM planner's release default would be lowered to so that it starts on these
    targets' unified NVIDIA devices (the largest that starts, where below the default); None for any other planner
    or device, or where the default starts. `best` plans a device with it, as `check`'s fix 1 offers it."""
    if getattr(getattr(planner, "levers", None), "budget", None) != "gpu_memory_utilization":
        return None
    from .versions import vllm_default_utilization

    release = planner._release() if hasattr(planner, "_release") else None
    default = vllm_default_utilization(release)
    if release is not None and release.key < FREE_CHECK_FROM:
        return None
    shares = [s for t in targets if (s := largest_share(t)) is not None]
    return min(shares) if shares and 0 < min(shares) < default else None
