"""The longest context a plan allows: the one search `check` (max_context), the fixes (a shorter context, a
smaller quant with a shorter context) and the page use.

A context of n × granule tokens is planned by the runtime and judged (verdict.fits by default); the answer is
the largest n whose plan passes, found by runtimes.base.largest (the upper end first, then a bisection: the
plan's memory only grows with the context).
"""

from __future__ import annotations

from collections.abc import Callable

from .model.spec import ModelSpec
from .quant.formats import WeightEstimate
from .runtimes import Allocation, Runtime, Settings, Target
from .runtimes.base import largest
from .verdict import fits

CTX_GRANULE = 256       # llama.cpp pads its cache to 256 cells (src/llama-context.cpp), so contexts step by it
POOL_GRANULE = 16       # pooled engines: vLLM's KV block; SGLang's pool is per token


def longest_context(runtime: Runtime, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                    targets: list[Target], *, hi: int, lo: int = 1, granule: int = CTX_GRANULE,
                    ok: Callable[[Allocation], bool] = fits) -> int | None:
    """The longest context in [lo, hi] tokens (a multiple of ``granule``; at least one granule) whose plan passes
    ``ok``; None when even the shortest does not."""
    def passes(n: int) -> bool:
        at = settings.with_(ctx=n * granule)
        if ok is fits:
            return plan_fits(runtime, model, weights, at, targets)
        return ok(runtime.allocate(model, weights, at, targets))

    units = largest(max(1, lo // granule), max(1, hi // granule), passes)
    return units * granule if units else None


def plan_fits(runtime: Runtime, model: ModelSpec, weights: WeightEstimate, settings: Settings,
              targets: list[Target]) -> bool:
    """verdict.fits of the runtime's plan; the plan is skipped where the runtime knows without it that a device
    overflows (its surely_over: a lower bound of the memory, such as llama.cpp's bytes without compute buffers)."""
    over = getattr(runtime, "surely_over", None)
    if over is not None and over(model, weights, settings, targets):
        return False
    return fits(runtime.allocate(model, weights, settings, targets))


def starts_one_request(a: Allocation) -> bool:
    """A pooled engine starts with this max_model_len and its pool holds one request of it."""
    return a.refusal is None and (a.max_concurrency or 0) >= 1
