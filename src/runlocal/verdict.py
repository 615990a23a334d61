"""Whether an allocation runs, in one word, and how fast: the judgement every planner's result gets.

Pure computation over a runtime's Allocation (runtimes/base.py); plan.py, fixes.py, choose.py and compare.py all
judge through here, so a verdict means the same thing in `check`, `best` and `compare`.
"""

from __future__ import annotations

from .hardware.unified_memory import over_shared_share, with_shared_host
from .model.spec import ModelSpec
from .quant.formats import WeightEstimate
from .runtimes import Allocation, Step, Target

TIGHT_SHARE = 0.90       # above 90 % of a device's capacity, a runtime spike or another app tips it over
DEFAULT_RAM_BANDWIDTH_GBS = 89.6   # dual-channel DDR5-5600: 2 × 8 B × 5600 MT/s, when --ram names no device


def fits(a: Allocation) -> bool:
    """Every device holds its share, the runtime does not refuse, and the pool holds one request of the context."""
    # a KV pool that cannot hold one request of the asked context does not run it, even where the
    # server starts (SGLang rejects such a request; vLLM refuses to start, a refusal already)
    whole_request = a.max_concurrency is None or a.max_concurrency >= 1
    devices = with_shared_host(a.devices)       # unified memory: the CPU side gets what the GPU side leaves
    return a.refusal is None and whole_request and all(d.capacity <= 0 or d.total <= d.capacity for d in devices)


def rejects_long_requests(a: Allocation) -> str | None:
    """A server that starts with a KV pool smaller than one request of the asked context — SGLang only logs a warning
    (managers/tp_worker.py, runtimes/sglang.py) and then rejects, or with --allow-auto-truncate truncates, a longer
    request; vLLM refuses to start instead (its refusal): what it does, said; None for any other plan."""
    if a.refusal or a.max_concurrency is None or a.max_concurrency >= 1 or a.kv_cache_tokens is None:
        return None
    if not all(d.capacity <= 0 or d.total <= d.capacity for d in with_shared_host(a.devices)):
        return None
    return (f"starts, but its KV pool holds {a.kv_cache_tokens:,} tokens, fewer than the context of "
            f"{a.settings.ctx or 0:,}: a request longer than the pool is rejected (or truncated with "
            "--allow-auto-truncate), so the context asked does not run")


def gpus_fit(a: Allocation) -> bool:
    """The GPU side alone: rises with every layer offloaded, so -ngl can be bisected on it (the whole
    plan is not monotonic in -ngl: too few GPU layers overflow the RAM instead)."""
    return a.refusal is None and all(d.capacity <= 0 or d.total <= d.capacity for d in a.devices if d.kind != "cpu")


def tight_share(runtime: str) -> float:
    """The share of a device above which a plan is tight: 90 %, or the share an engine takes of every GPU by design
    at its default where that is more (vLLM's --gpu-memory-utilization, 0.92 from v0.20.0: registry reserves_budget), so
    a vLLM plan that fills exactly the budget vLLM reserves is not called tight for that reservation alone (one asked
    above it still is)."""
    from .runtimes import engine

    if engine(runtime).reserves_budget:
        from .runtimes.versions import vllm_default_utilization

        return max(TIGHT_SHARE, vllm_default_utilization(None))
    return TIGHT_SHARE


def tight_line(a: Allocation) -> float:
    """tight_share for the allocation's runtime."""
    return tight_share(a.settings.runtime)


def weights_in_ram(a: Allocation, model: ModelSpec) -> bool:
    """A llama.cpp-family plan on a GPU whose settings hold some layer or routed expert in system memory: -ngl k at
    most n_layer (the output layer or a block stays on the CPU, src/llama-model.cpp load_tensors: plan.all_layers_on_gpu),
    --n-cpu-moe, or an -ot rule to "CPU" — whether --fit chose them or the user typed them (review22 #9: the default
    plan was tight and its own printed command, checked, fits, for the same process)."""
    from .runtimes import engine

    if not engine(a.settings.runtime).ggml or not any(d.kind != "cpu" and d.weights for d in a.devices):
        return False
    s = a.settings.llamacpp
    ngl = s.n_gpu_layers
    return bool(s.n_cpu_moe or any(buf == "CPU" for _, buf in s.override_tensor)
                or (ngl is not None and 0 <= ngl <= model.n_layers))


def verdict(a: Allocation, model: ModelSpec | None = None) -> str:
    """fits | tight | does_not_fit | unknown (a device of unknown capacity). With ``model``, a GPU plan holding layers
    or experts in system memory is tight whoever placed them (weights_in_ram): one placement, one verdict."""
    if any(d.capacity <= 0 for d in a.devices):
        return "unknown"
    if not fits(a):
        return "does_not_fit"
    line = tight_line(a)
    if any(d.total > line * d.capacity for d in a.devices if d.kind != "cpu" or len(a.devices) == 1):
        return "tight"
    if over_shared_share(a.devices, line):
        return "tight"
    if a.compromise or (model is not None and weights_in_ram(a, model)):
        return "tight"
    return "fits"


def speed(model: ModelSpec, weights: WeightEstimate, alloc: Allocation,
          targets: list[Target]) -> tuple[dict[str, float | None], tuple[Step, ...]]:
    """Decode and prefill tokens/s for this allocation (hardware/speed.py: bytes read per token over each
    device's fitted bandwidth share, FLOPs per token over its fitted compute share), with the steps that say how."""
    from .hardware.speed_explain import allocation_speed

    quant = alloc.weights_as_run or weights.quant      # an FP8 checkpoint run in bf16 multiplies in bf16
    result, steps = allocation_speed(model, quant, alloc, targets, DEFAULT_RAM_BANDWIDTH_GBS)
    return result, tuple(Step(*st) for st in steps)


def weights_held(plan) -> tuple[str, int]:
    """(the weights' words, the bytes the runtime holds): "fp8-channel checkpoint, run as bf16" and the bf16 bytes where
    the runtime holds another type than the checkpoint's (transformers dequantizing FP8: Allocation.weights_as_run),
    else the type planned and its size, for a plan.Plan (here, below plan and fixes, which both read it, as do the
    terminal's header and the site's Weights fact)."""
    a = plan.allocation
    if a.weights_as_run and a.devices:
        return (f"{plan.weights.quant} checkpoint, run as {a.weights_as_run}", sum(d.weights for d in a.devices))
    return str(plan.weights.quant), plan.weights.total
