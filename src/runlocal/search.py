"""The longest context a plan allows: the one search `check` (max_context), the fixes (a shorter context, a
smaller quant with a shorter context) and the page use.

A context of n × granule tokens is planned by the runtime and judged (verdict.fits by default); the answer is
the largest n whose plan passes, found by runtimes.base.largest (the upper end first, then a bisection: the
plan's memory only grows with the context).
"""

from __future__ import annotations

from collections.abc import Callable

from .boundary import Room, largest_guided
from .model.spec import ModelSpec
from .quant.formats import WeightEstimate
from .runtimes import Allocation, Runtime, Settings, Target
from .runtimes.base import largest
from .verdict import TIGHT_SHARE, fits, verdict

CTX_GRANULE = 256       # llama.cpp pads its cache to 256 cells (src/llama-context.cpp), so contexts step by it
POOL_GRANULE = 16       # pooled engines: vLLM's KV block; SGLang's pool is per token


def longest_context(runtime: Runtime, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                    targets: list[Target], *, hi: int, lo: int = 1, granule: int = CTX_GRANULE,
                    ok: Callable[[Allocation], bool] = fits, first: int | None = None,
                    margin_held: bool = False) -> int | None:
    """The longest context in [lo, hi] tokens (a multiple of ``granule``; at least one granule) whose plan passes
    ``ok``; None when even the shortest does not. For verdict.fits and a "fits" verdict, the search is guided by the
    room each plan leaves (boundary.largest_guided: the same answer from fewer plans), and ``first``, a context
    whose plan is made already (the one asked for), is probed first: it splits the range, often near the edge.
    ``margin_held`` (with verdict.fits): the runtime's kept_free must also stay free (fits_room) — llama-server --fit's
    margin, where the answer is the longest -c at which --fit would move nothing off the GPU."""

    def passes(n: int) -> bool:
        return ok(runtime.allocate(model, weights, settings.with_(ctx=n * granule), targets))

    def probe(n: int) -> tuple[bool, Room]:
        at = settings.with_(ctx=n * granule)
        if ok is fits:
            return fits_room(runtime, model, weights, at, targets, compute=asked_compute if start else None,
                             margin_held=margin_held)
        over = getattr(runtime, "surely_over", None)
        if over is not None and over(model, weights, at, targets):
            return False, None       # a device overflows (a lower bound says so): not "fits", nor even tight
        a = runtime.allocate(model, weights, at, targets)
        return ok(a), room(a, tight=True)

    def asked_compute() -> dict[str, int]:
        # the compute buffers of the plan made already at ``first``: a guide for the rooms of skipped plans
        return {d.name: d.compute for d in runtime.allocate(model, weights, settings.with_(ctx=first), targets).devices}

    start = first // granule if first and first % granule == 0 else None
    if ok is fits or ok is fits_verdict:
        units = largest_guided(max(1, lo // granule), max(1, hi // granule), probe, start)
    else:
        units = largest(max(1, lo // granule), max(1, hi // granule), passes)
    return units * granule if units else None


def fits_verdict(a: Allocation) -> bool:
    """The plan's verdict is "fits" (not tight): what a fix that shortens the context aims for first."""
    return verdict(a) == "fits"


def room(a: Allocation, *, tight: bool = False) -> dict[str, float] | None:
    """Bytes to spare on each device (negative: over), against its capacity, or with ``tight`` against the share
    above which verdict.verdict calls a plan tight; None where memory does not decide (a refusal while every device
    holds its share, a pool that cannot hold one request, a compromise the runtime made; a refusal with a device over,
    such as Ollama's "more system memory than is available", keeps its rooms). Only guides a search: the verdicts
    decide."""
    over = any(d.capacity > 0 and d.total > d.capacity for d in a.devices)
    if (a.refusal is not None and not over) or (a.max_concurrency is not None and a.max_concurrency < 1):
        return None
    if tight and a.compromise:
        return None
    return {d.name: (TIGHT_SHARE * d.capacity if tight and (d.kind != "cpu" or len(a.devices) == 1) else d.capacity)
            - d.total for d in a.devices if d.capacity > 0} or None


def fits_room(runtime: Runtime, model: ModelSpec, weights: WeightEstimate, settings: Settings,
              targets: list[Target], *, compute: Callable[[], dict[str, int]] | None = None,
              margin_held: bool = False) -> tuple[bool, Room]:
    """plan_fits and the room: the plan's (room()), or where the runtime's bound skips the plan, the room its
    lower bound of the memory leaves (LlamaCpp.floor), which is at least the plan's — less ``compute()``, a guess of
    each device's compute buffer (a plan made at another point), where given. Rooms only guide.
    The bytes the runtime keeps free on a device by design (its kept_free: --fit's margin) are taken off its room;
    with ``margin_held`` they must also stay free for the plan to pass (the layers held where --fit placed them:
    past that, --fit would move some)."""
    kept_free = getattr(runtime, "kept_free", None)
    kept = kept_free(settings, targets, held=margin_held) if kept_free is not None else {}
    over = getattr(runtime, "surely_over", None)
    if over is not None and over(model, weights, settings, targets):
        # the runtime's own guess of where --fit leaves bytes, its margin counted (Ollama; llama.cpp where the host
        # is over whatever --fit answers), else the floor's
        guess = getattr(runtime, "room_when_over", None)
        rooms = guess(model, weights, settings, targets) if guess is not None else None
        floor = getattr(runtime, "floor", None)
        if rooms is not None or floor is None:
            return False, rooms
        devices = [t for t in targets if t.kind != "cpu"] + [t for t in targets if t.kind == "cpu"][:1]
        guess = compute() if compute is not None else {}
        rooms = {t.name: t.capacity - f - guess.get(t.name, 0) - kept.get(t.name, 0)
                 for f, t in zip(floor(model, weights, settings, targets), devices) if t.capacity > 0}
        return False, rooms or None
    a = runtime.allocate(model, weights, settings, targets)
    left = room(a)
    passed = fits(a)
    if left is not None and kept:
        left = {name: r - kept.get(name, 0) for name, r in left.items()}
        passed = passed and not (margin_held and any(left[name] < 0 for name in kept if name in left))
    return passed, left


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
