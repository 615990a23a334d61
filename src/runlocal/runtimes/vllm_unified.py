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

Which "free" each release reads: on an integrated GPU psutil's available memory (MemAvailable) — by
``is_integrated`` from vllm#35356, and before it by a hard-coded list of compute capabilities (8.7 Orin, 11.0 Thor,
12.1 Spark; the release that added it not read); before that, torch.cuda.mem_get_info, which on a unified device is
the kernel's MemFree (ollama#12283), the same figure on a fresh boot with the page cache dropped, the state the 0.79
was read in. So one free figure serves every release; the fraction that runs differs only by what comes on top of
the budget: the CUDA graphs before v0.21 (0.82 on a Spark: ⌊(101.12 − 0.5) / 121.69⌋), nothing from it (0.83).
Before 0.9.1 there is no start-up check: the same budget runs out of memory allocating the KV cache instead.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from ..units import GiB, MiB
from .base import Step, Target

if TYPE_CHECKING:
    from .versions import RuntimeVersion

# The first release known to carry the check: issue #20305 reports "Free memory on device … on startup is less than
# desired GPU memory utilization" on v0.9.1; the 0.8.5 wheel's gpu_worker.py has none (0.9.0 not read)
FREE_CHECK_FROM = (0, 9, 1)
DEVICE = "cuda:0"          # torch.device as vLLM's MemorySnapshot names the first GPU
GRAPHS_ON_TOP = 512 * MiB  # vllm.CUDA_GRAPH_BYTES (imported there from here: one figure)
REFUSAL_START = "Free memory on device"     # how vLLM's start-up refusal begins (start_refusal)
# start_refusal's other two: the graphs captured after the KV cache (before v0.21), a release before the check
REFUSAL_GRAPHS = "Out of memory capturing CUDA graphs: vLLM starts"
REFUSAL_NO_CHECK = "Out of memory allocating the KV cache: vLLM"
START_CONDITION = "runs if at least"        # how start_condition begins
# psutil's available memory is vLLM's free figure on an integrated GPU at least from here (free_column)
AVAILABLE_READ_FROM = (0, 20)


def refused_at_start(refusal: str | None) -> bool:
    """Whether a plan's refusal is start_refusal's: the budget, a share of CUDA's total, over the free memory."""
    return refusal is not None and refusal.startswith((REFUSAL_START, REFUSAL_GRAPHS, REFUSAL_NO_CHECK))


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


def largest_share(gpu: Target, on_top: int = 0) -> float | None:
    """The largest --gpu-memory-utilization, to two decimals, whose request — with ``on_top``, what the release
    allocates outside the budget (the CUDA graphs before v0.21) — the free memory covers."""
    total = cuda_total(gpu)
    return math.floor((gpu.capacity - on_top) / total[0] * 100) / 100 if total else None


def _free_words(gpu: Target, total_source: str) -> str:
    """Which free figure the plan assumes, and its source (said once where the total's is the same)."""
    dev = _device(gpu)
    assert dev is not None
    if gpu.capacity != dev.gpu_usable_bytes:
        return "as --vram gives it"
    # a figure read on the device (share_source): an assumed one refuses nothing (free_assumed, start_condition)
    from ..hardware.catalog import load_sources

    source = load_sources().get(dev.share_source or "", dev.share_source or "")
    return (f"runlocal's figure for it, {dev.gpu_memory_share:g} × {dev.memory_gib:g} GiB, "
            + ("both from " if source == total_source else f"from {_cited(source)}; the total from ")
            + (_cited(total_source) if total_source else "the catalog"))


def _cited(source: str) -> str:
    """A source as the refusal names it: what it is, in words, its address left to --explain's budget step
    (budget_step) and the catalog (review23 #10c: a bare address of an unrelated-looking project's issue told the
    reader nothing); the address itself where the catalog has no words for it."""
    from ..hardware.catalog import source_words

    words = source_words().get(source)
    return f"{words} (its address: --explain)" if words else source


def free_assumed(gpu: Target) -> bool:
    """Whether the free memory planned on a unified NVIDIA device is runlocal's assumption (the catalog's default
    share, no --vram), not a figure read on that device (review22b finding 3: a Jetson's 0.75 × RAM)."""
    dev = _device(gpu)
    return dev is not None and not dev.share_source and gpu.capacity == dev.gpu_usable_bytes


def planned_free(gpu: Target, utilization: float, on_top: int = 0) -> int:
    """The free memory a vLLM plan is judged against: where it is assumed (free_assumed), at least what vLLM asks
    for with what comes on top of it (``on_top``: the CUDA graphs before v0.21), which start_condition states as the
    plan's condition; else the figure planned. No refusal rests on a guess."""
    total = cuda_total(gpu)
    if total is None or not free_assumed(gpu):
        return gpu.capacity
    return max(gpu.capacity, math.ceil(total[0] * utilization) + on_top)


def free_column(release: tuple[int, ...] | None) -> str:
    """Which of `free -g`'s columns is the figure this release's start-up check compares (review23 finding 7): on an
    integrated GPU psutil's available memory (MemAvailable, the "available" column) — by is_integrated from vllm#35356,
    read here from v0.20.0, and on Orin / Thor / Spark before it by a compute-capability list ((8, 7), (11, 0),
    (12, 1), replaced by #35356), already in vLLM's code in September 2025 (quoted in ollama#12283) but from a release
    not read here; before that list, torch.cuda.mem_get_info, the kernel's MemFree there (ollama#12283), the "free"
    column. On a Jetson with a warm page cache the two differ by the cache's size."""
    if release is None or release >= AVAILABLE_READ_FROM:
        return "`free -g`'s available column (MemAvailable, what vLLM reads as free on an integrated GPU)"
    return ("`free -g`'s available column (MemAvailable) if this release reads it on an integrated GPU as later ones "
            "do (a list of Orin / Thor / Spark compute capabilities, in vLLM's code by September 2025, first release not "
            "read here), else its free column (MemFree, what torch.cuda.mem_get_info reads there)")


def start_condition(gpu: Target, utilization: float, release: tuple[int, ...] | None,
                    on_top: int = 0) -> str | None:
    """Where the free memory is assumed: the free memory the plan holds under (the capacity planned_free gives the
    table), and how to state the real figure."""
    total = cuda_total(gpu)
    if total is None or not free_assumed(gpu):
        return None
    from ..hardware.catalog import DEFAULT_UNIFIED_SHARE

    dev = _device(gpu)
    assert dev is not None
    requested = math.ceil(total[0] * utilization)
    stops = ("vLLM refuses at start-up" if release is None or release >= FREE_CHECK_FROM else
             "this release has no start-up check, and the KV cache allocation runs out of memory")
    stops += " or the graph capture does" if on_top and "refuses" in stops else ""
    graphs = f", + {on_top / GiB:.2f} GiB of CUDA graphs captured after the KV cache in this release" if on_top else ""
    # the table shows the plan at that free figure (planned_free), all of which vLLM then holds: said, so that its
    # capacity column and the assumed share in the hardware note are not two unexplained figures (review23 finding 6)
    return (f"{START_CONDITION} {(requested + on_top) / GiB:.2f} GiB is free when vLLM starts ({utilization:g} × "
            f"{total[1]}{graphs}), the capacity the table shows, all of which vLLM then holds; with less, {stops}. "
            f"runlocal's own figure, {gpu.capacity / GiB:.2f} GiB free ({DEFAULT_UNIFIED_SHARE:g} × "
            f"{dev.memory_gib:g} GiB, not measured on this device), refuses nothing: check {free_column(release)} and "
            "state it with --vram")


def assumed_share_note(note: str) -> str:
    """hardware/targets.py's note on a unified device whose GPU share runlocal assumed ("GPU may use 48.0 of 64 GiB
    (runlocal's assumed 75% …)"), as a vLLM plan with a start condition says it: that plan is shown at the free memory
    its start-up check needs, not at the share (review23 finding 6); other notes as they are."""
    head, sep, rest = note.partition(": unified memory, GPU may use ")
    if not sep or "(runlocal's assumed " not in rest:
        return note
    share = rest.split(" (", 1)[0]
    return (f"{head}: unified memory; runlocal's assumed GPU share ({share}, not measured) is not what this vLLM plan "
            "is shown at: vLLM's start-up check compares its fraction of CUDA's total with the memory free, so the "
            "plan is shown at the free memory that check needs (the condition above)")


def start_refusal(gpu: Target, utilization: float, release: tuple[int, ...] | None, on_top: int = 0,
                  weights: int = 0, held: int = 0) -> str | None:
    """Where utilization × CUDA's total, with ``on_top`` (the CUDA graphs a release before v0.21 captures after the
    KV cache), exceeds the free memory planned: vLLM's start-up refusal in its words (from FREE_CHECK_FROM), else the
    out-of-memory that follows, and the largest fraction the free memory covers (one rule, largest_share). None where
    it runs, on another device, or where the free figure is assumed (start_condition says what it needs instead).
    ``weights`` (a GPU's) and ``held`` (all the budget holds before the KV cache: weights, activations, non-torch
    memory): where they overflow that fraction's budget, the fraction clears the check and nothing more, said so
    (review23 finding 5: "0.83 starts" beside 131.42 GiB of BF16 weights on a 101.12 GiB Spark)."""
    total = cuda_total(gpu)
    requested = math.ceil(total[0] * utilization) if total else 0
    if total is None or free_assumed(gpu) or requested + on_top <= gpu.capacity:
        return None
    checked = release is None or release >= FREE_CHECK_FROM
    fits, free, whole = largest_share(gpu, on_top), gpu.capacity / GiB, total[0] / GiB
    graphs = f" + {on_top / GiB:.2f} GiB of CUDA graphs" if on_top else ""
    clears = ("passes the start-up check" if checked and not on_top else
              f"is the largest whose budget{' and CUDA graphs' if on_top else ''} the free memory covers")
    fix = (f"--gpu-memory-utilization {fits:.2f} {clears}: {fits:.2f} × {whole:.2f} = "
           f"{fits * whole:.2f} GiB{graphs} ≤ {free:.2f} GiB" if fits and fits > 0 else "no fraction starts")
    if fits and fits > 0 and weights > gpu.capacity:
        fix += f", but the weights alone ({weights / GiB:.2f} GiB) exceed the {free:.2f} GiB free: see the fixes"
    elif fits and fits > 0 and held > math.ceil(total[0] * fits):
        fix += (f", but the weights, activations and non-torch memory ({held / GiB:.2f} GiB) leave that budget no KV "
                "cache: see the fixes")
    why = (f"the fraction is of {total[1]}, while {free:.2f} GiB is free, {_free_words(gpu, total[2])}; the OS and page "
           f"cache hold the rest of the unified memory. {fix})")
    if checked and requested > gpu.capacity:
        return (f"{REFUSAL_START} {DEVICE} ({round(free, 2)}/{round(whole, 2)} GiB) on startup is less than desired "
                f"GPU memory utilization ({utilization:g}, {round(requested / GiB, 2)} GiB) (vLLM refuses to start: {why}")
    if checked:
        return (f"{REFUSAL_GRAPHS} ({utilization:g} × {whole:.2f} = {requested / GiB:.2f} GiB ≤ {free:.2f} GiB free) and "
                f"sizes its KV cache to that budget; the CUDA graphs, captured after it in this release "
                f"({on_top / GiB:.2f} GiB), do not fit in what is left ({why}")
    return (f"{REFUSAL_NO_CHECK} releases before 0.9.1 have no start-up check on free memory, and the budget, "
            f"{utilization:g} × {whole:.2f} = {requested / GiB:.2f} GiB{graphs}, is more than the {free:.2f} GiB free "
            f"({why}")


def budget_step(gpu: Target, utilization: float, budget: int) -> Step:
    """The --explain step of the budget, naming what the fraction multiplies."""
    total = cuda_total(gpu)
    if total is None:
        return Step("budget", f"{gpu.capacity:,} B × gpu_memory_utilization {utilization}", f"{budget:,} B",
                    "vllm/v1/worker/gpu_worker.py determine_available_memory")
    from ..hardware.catalog import load_sources

    cited = f"; CUDA's total: {total[2]}" if total[2] else ""
    dev = _device(gpu)
    free_source = load_sources().get(dev.share_source or "", "") if dev is not None and not free_assumed(gpu) else ""
    if free_source and gpu.capacity == dev.gpu_usable_bytes:
        cited += "; the free figure: " + ("the same" if free_source == total[2] else free_source)
    return Step("budget", f"{total[0]:,} B ({total[1]}, not the {gpu.capacity:,} B planned free) × "
                f"gpu_memory_utilization {utilization}", f"{budget:,} B",
                "vllm/v1/worker/utils.py request_memory: math.ceil(total_memory × gpu_memory_utilization)" + cited)


def _vllm_release(planner) -> tuple[bool, RuntimeVersion | None]:
    """(whether ``planner`` budgets by --gpu-memory-utilization, i.e. is vLLM's; its named release, None for the
    current one)."""
    if getattr(getattr(planner, "levers", None), "budget", None) != "gpu_memory_utilization":
        return False, None
    return True, planner._release() if hasattr(planner, "_release") else None


def starting_share(planner, targets: list[Target]) -> float | None:
    """The --gpu-memory-utilization a vLLM planner's release default would be lowered to so that it starts on these
    targets' unified NVIDIA devices (the largest that starts, where below the default); None for any other planner
    or device, or where the default starts. `best` plans a device with it, as `check`'s fix 1 offers it."""
    is_vllm, release = _vllm_release(planner)
    if not is_vllm:
        return None
    from .versions import vllm_default_utilization, vllm_graphs_in_budget

    default = vllm_default_utilization(release)
    # before v0.21 the CUDA graphs come on top of the budget (start_refusal's on_top; vllm.CUDA_GRAPH_BYTES)
    on_top = 0 if vllm_graphs_in_budget(release) else GRAPHS_ON_TOP
    # an assumed free figure lowers nothing: the default's command is kept, its condition said (start_condition)
    shares = [s for t in targets if not free_assumed(t) and (s := largest_share(t, on_top)) is not None]
    return min(shares) if shares and 0 < min(shares) < default else None


def plan_condition(planner, settings, targets: list[Target]) -> str | None:
    """start_condition for a vLLM plan's first unified NVIDIA device, at the plan's fraction and release."""
    is_vllm, release = _vllm_release(planner)
    if not is_vllm:
        return None
    from .versions import vllm_graphs_in_budget

    utilization = settings.vllm.gpu_memory_utilization
    on_top = 0 if vllm_graphs_in_budget(release) or settings.vllm.enforce_eager else GRAPHS_ON_TOP
    said = (start_condition(t, utilization, release.key if release else None, on_top) for t in targets if utilization)
    return next((c for c in said if c), None)


def assumed_free_note(planner, device_ids: list[str]) -> str | None:
    """`best` / a list of rows: vLLM's command on a unified NVIDIA device whose free memory is assumed keeps the
    default fraction (no lower one is written from a guess); say what it needs instead."""
    is_vllm, release = _vllm_release(planner)
    if not is_vllm:
        return None
    from ..hardware.catalog import DEFAULT_UNIFIED_SHARE, load_devices
    from .versions import vllm_default_utilization

    named = [d.id for d in load_devices() if d.id in device_ids and d.vendor == "nvidia" and d.unified_memory
             and not d.share_source]
    if not named:
        return None
    return (f"vllm on {', '.join(named)}: the command keeps the default --gpu-memory-utilization "
            f"{vllm_default_utilization(release):g}, which starts only if that share of CUDA's total is free; "
            f"runlocal assumes {DEFAULT_UNIFIED_SHARE:g} × RAM is free there, not measured, so it writes no lower "
            f"fraction: `runlocal check … --vram <GiB>` with the figure in {free_column(release.key if release else None)} "
            "gives the one that starts")
