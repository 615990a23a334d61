"""The longest context a plan allows: the one search `check` (max_context), the fixes (a shorter context, a
smaller quant with a shorter context) and the page use.

A context of n × granule tokens is planned by the runtime and judged (verdict.fits by default); the answer is
the largest n whose plan passes, found by boundary.largest_guided (the upper end first, then the lower, then
interpolation on the room each plan leaves) or runtimes.base.largest (a bisection). The plan's memory grows with the
context; where --fit re-places layers at each context, passing need not be monotone (longest_context says what the
answer is then).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from .boundary import Room, device_keys, edge_confirmed, largest_guided
from .model.spec import ModelSpec
from .quant.formats import WeightEstimate
from .runtimes import Allocation, DeviceMemory, Runtime, Settings, Step, Target
from .runtimes.base import largest
from .runtimes.llamacpp_fit_bound import every_layer_surely_moved
from .verdict import fits, tight_line, verdict

CTX_GRANULE = 256       # llama.cpp pads its cache to 256 cells (src/llama-context.cpp), so contexts step by it
POOL_GRANULE = 16       # pooled engines: vLLM's KV block; SGLang's pool is per token
# the one context the search tries between the range's ends before either (boundary.largest_guided's first), the
# same whatever was asked: 4,096, the shortest context llama-server's --fit shortens to (common/common.h
# fit_params_min_ctx) and Ollama's default num_ctx below 23 GiB of VRAM, so the plan the user asked for is often this
# one, made already; and a lower end of the bracket far nearer most edges than 256 tokens
PIVOT_CTX = 4096
# the most whole plans the max-context search makes between PIVOT_CTX and the top where the runtime guesses each
# device's room (llama.cpp's --fit over several GPUs: each plan ~20 graph simulations, 0.5–2 s on a loaded machine;
# the API answers at 20 s): the sketch's edge, then one cache step past it (the exact edge where both agree), then one
# more where the sketch missed
GUIDED_PLANS = 4


def longest_context(runtime: Runtime, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                    targets: list[Target], *, hi: int, lo: int = 1, granule: int = CTX_GRANULE,
                    ok: Callable[[Allocation], bool] = fits, margin_held: bool = False, beyond: int | None = None,
                    tried: list[tuple[int, bool]] | None = None, how: list[str] | None = None) -> int | None:
    """The longest context in [lo, hi] tokens (a multiple of ``granule``; at least one granule) whose plan passes
    ``ok``; None when even the shortest does not. For verdict.fits and a "fits" verdict, the search is guided by the
    room each plan leaves (boundary.largest_guided: the same answer from fewer plans): ``hi`` probed first (many
    plans end there), then PIVOT_CTX, then ``lo`` where the pivot fails. ``beyond``: a context past ``hi`` that
    was asked for (past the trained context): only where ``hi`` passes does the search go on up to it, so the figure
    up to ``hi`` is the same whatever was asked.
    ``margin_held`` (with verdict.fits): the runtime's kept_free must also stay free (fits_room) — llama-server --fit's
    margin, where the answer is the longest -c at which --fit would move nothing off the GPU. ``tried``: where given,
    each context planned and whether it passed, in order (for --explain: context_search_step).

    What "longest" means where passing is not monotone in the context: a hybrid model under --fit (its GPU use is
    not monotone in -ngl, so --fit's placement, and with it whether the host holds the rest, jumps from one -c to
    the next: qwen3.5-397b-a17b on an RTX 3060 with 220 GiB starts at every -c up to 83,968, not at 84,224, again at
    84,480, and in runs up to 115,712 — a plan at every cache step). The answer is an edge: it starts, one cache step
    more does not, every context the search planned below it started and every one above failed; and the probes
    are fixed points (the top, PIVOT_CTX) and what the plans answered — never the context asked, nor anything asked
    before (plans and --fit's answers are functions of their point) — so every -c states the same figure (83,968
    there). Why this and not another reading: the end of the run holding the context asked (what searching from it
    gave: 83,968 at -c 4,096, 100,352 at -c 32,768) moves with -c; the largest that starts, reached from the top,
    promises that no longer -c starts but nothing below it (115,712 there, with 84,224 failing), and settling it, or
    that every shorter -c starts, takes a plan at every cache step (a --fit search each: hundreds of plans, seconds,
    where the search makes about ten). An edge from fixed points is one figure a user can ask for and see start,
    and the first cache step past it fails; --explain (context_search_step) lists the plans and says so where the
    context asked lies on the other side of it.
    Where the runtime sketches its plan cheaply (context_guide: llama.cpp's --fit over several GPUs, each plan a
    whole --fit), the bracket between PIVOT_CTX and the top gets at most GUIDED_PLANS plans: the answer still starts
    and every context planned above it failed, but the first failing one may lie more than one cache step above it —
    --explain states by how many tokens the exact edge may lie above the answer (0 where the plans closed it)."""

    judge = partial(fits_verdict, model=model) if ok is fits_verdict else ok    # the verdict rule's own (with model)

    def passes(n: int) -> bool:
        passed = judge(runtime.allocate(model, weights, settings.with_(ctx=n * granule), targets))
        if tried is not None:
            tried.append((n * granule, passed))
        return passed

    answered: dict[int, tuple[bool, Room]] = {}

    def probe(n: int) -> tuple[bool, Room]:
        if n not in answered:
            answered[n] = planned(n)
            if tried is not None:
                tried.append((n * granule, answered[n][0]))
        return answered[n]

    def planned(n: int) -> tuple[bool, Room]:
        at = settings.with_(ctx=n * granule)
        if ok is fits:
            return fits_room(runtime, model, weights, at, targets, compute=pivot_compute, margin_held=margin_held)
        over = getattr(runtime, "surely_over", None)
        if over is not None and over(model, weights, at, targets):
            return False, None       # a device overflows (a lower bound says so): not "fits", nor even tight
        if ok is keeps_every_layer:
            return _kept_whole(runtime, model, weights, at, targets)
        a = runtime.allocate(model, weights, at, targets)
        return judge(a), room(a, tight=True)

    def pivot_compute() -> dict[str, int]:
        # PIVOT_CTX's compute buffers (planned anyway where the top fails): skipped plans' rooms, whatever was asked
        at = settings.with_(ctx=min(PIVOT_CTX, max(1, hi // granule) * granule))
        devices = runtime.allocate(model, weights, at, targets).devices
        return {k: d.compute for k, d in zip(device_keys(d.name for d in devices), devices)}

    if ok is fits or ok is fits_verdict or ok is keeps_every_layer:
        top = max(1, hi // granule)
        units = _guided_by_runtime(runtime, model, weights, settings, targets, granule, max(1, lo // granule), top,
                                   probe, answered, how) if ok is fits and not margin_held else None
        if units is None:
            units = largest_guided(max(1, lo // granule), top, probe, PIVOT_CTX // granule, top_first=True)
        if units == top and beyond is not None and beyond // granule > top:
            units = largest_guided(top, beyond // granule, probe, top_first=True)
    else:
        units = largest(max(1, lo // granule), max(1, hi // granule), passes)
    return units * granule if units else None


def _kept_whole(runtime: Runtime, model: ModelSpec, weights: WeightEstimate, at: Settings,
                targets: list[Target]) -> tuple[bool, Room]:
    """keeps_every_layer of the plan at ``at`` and the room --fit's margin leaves (it moves a layer past it; none
    once moved). Where --fit over several GPUs surely moves a layer or experts off them (a lower bound of every split
    says so: llamacpp_fit_bound.every_layer_surely_moved) the plan's compromise would say so and its answer be
    (False, None): the same, without its whole --fit (some twenty graph simulations)."""
    if every_layer_surely_moved(runtime, model, weights, at, targets):
        return False, None
    a = runtime.allocate(model, weights, at, targets)
    kept_free = getattr(runtime, "kept_free", None)
    kept = kept_free(at, targets, held=True) if kept_free is not None else {}
    left = room(a) if not a.compromise else None
    return keeps_every_layer(a), {k: r - kept.get(k, 0) for k, r in left.items()} if left else None


def _guided_by_runtime(runtime: Runtime, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                       targets: list[Target], granule: int, lo: int, top: int,
                       probe: Callable[[int], tuple[bool, Room]], answered: dict[int, tuple[bool, Room]],
                       how: list[str] | None) -> int | None:
    """The longest context where the runtime offers a cheap guess of each device's room (its context_guide:
    llama.cpp's --fit over several GPUs, where each plan is a whole --fit of some twenty graph simulations): PIVOT_CTX
    planned (often the plan asked for, made already), then the top where the guess does not put it past the edge
    (a top that starts is the answer, as largest_guided's), then between them at most GUIDED_PLANS whole plans
    (boundary.edge_confirmed): the first where the guess puts the edge — the sketch on GPUs shrunk by the compute
    buffers it missed at PIVOT_CTX, each device moved by what it missed at the nearest plan below that started —
    then galloping from it and bisecting; the top last where none of them failed. The answer starts (a whole plan, or
    PIVOT_CTX's, says so) and the context above it that does not is a whole plan's too; where the plans did not close
    the bracket, the exact edge is within its width, and --explain says by how many tokens. None where the runtime
    has no guess or PIVOT_CTX fails: largest_guided goes on from the same plans (kept in probe)."""
    guide = getattr(runtime, "context_guide", None)
    pivot = PIVOT_CTX // granule
    if guide is None or not lo < pivot < top:
        return None
    sketch = guide(model, weights, settings, targets)
    if sketch is None or not probe(pivot)[0]:
        return None

    def rooms(devices: tuple[DeviceMemory, ...]) -> list[float]:
        return [d.capacity - d.total if d.capacity > 0 else float("inf") for d in devices]

    def whole(n: int) -> tuple[DeviceMemory, ...]:
        # a plan made already (probe's; allocate is memoized)
        return runtime.allocate(model, weights, settings.with_(ctx=n * granule), targets).devices

    # each GPU shrunk by the compute buffer the sketch missed on it at PIVOT_CTX (its fitted phases against the
    # traced graph's), so the sketch's --fit fills the same room and moves layers where the plan's does
    missed = iter([w.compute - s.compute for w, s in zip(whole(pivot), sketch(pivot * granule, targets))
                   if w.kind != "cpu"])       # the plan's GPUs, in the targets' order
    shrunk = [replace(t, capacity=t.capacity - next(missed, 0)) if t.kind != "cpu" else t for t in targets]

    def predicted(n: int) -> float:
        # the shrunk sketch, each device moved by what it missed at the nearest context below n that passed (a plan
        # made whole: PIVOT_CTX at least); the least room of them
        base = max(m for m, (ok, _) in answered.items() if ok and m <= n)
        return min(r + w - r0 for r, w, r0 in zip(rooms(sketch(n * granule, shrunk)), rooms(whole(base)),
                                                  rooms(sketch(base * granule, shrunk))))
    # the top is planned first only where the sketch does not put it past the edge (where it does, its whole plan is
    # one of GUIDED_PLANS' worth of --fit probes that decides nothing the bracket's plans do not): planned last where
    # no whole plan below it failed, so the answer's neighbour that does not start is always a whole plan's, and a
    # top that starts is the answer as before
    if predicted(top) >= 0 and probe(top)[0]:
        return top
    edge, failing = edge_confirmed(pivot, top, lambda n: probe(n)[0], predicted, most=GUIDED_PLANS)
    if failing == top and top not in answered and probe(top)[0]:
        return top
    if how is not None:
        how.append(f"between {PIVOT_CTX:,} and the top (planned only where the sketch below does not put it past "
                   "the edge, or where no plan below it failed), the largest that starts, searched on runlocal's sketch of "
                   "--fit (its probes sized with the fitted compute phases, no graph traced; each GPU shrunk by the "
                   f"compute buffer it missed at {PIVOT_CTX:,}, each device moved by what it missed at the nearest "
                   "plan below that started) and confirmed by whole plans; within "
                   f"{(failing - edge - 1) * granule:,} tokens of the exact edge ({failing * granule:,} does not start)")
    return edge


def context_search_step(tried: list[tuple[int, bool]], longest: int | None, passing: str, failing: str, *,
                        asked: int | None = None, asked_passes: bool | None = None, how: list[str] | None = None
                        ) -> Step:
    """--explain's account of longest_context: the contexts planned in order, what passing means (``passing``,
    ``failing``: "starts", "does not start"), the answer and its neighbour; and where the context asked (its plan
    made already) passed above the answer or failed below it, that passing is not monotone in -c there (the answer
    does not move for it)."""
    planned = ", ".join(f"{c:,} {'yes' if ok else 'no'}" for c, ok in tried)
    if longest is None:
        found = f"none: {tried[-1][0]:,} {failing}" if tried else "none"
    else:
        above = min((c for c, ok in tried if c > longest and not ok), default=None)
        found = f"{longest:,} {passing}" + (f", {above:,} {failing}" if above is not None else " (the range's top)")
    words = (f"the longest -c that {passing}, searched from fixed points (the range's top, {PIVOT_CTX:,}, then the "
             f"bracket{': ' + how[0] if how else ''}), never from the context asked: planned {planned} → {found}")
    if asked is not None and asked_passes is not None and longest is not None and (
            (asked_passes and asked > longest) or (not asked_passes and asked < longest)):
        words += (f"; -c {asked:,} (asked) {passing if asked_passes else failing}, {'above' if asked > longest else 'below'}"
                  f" it: here that is not monotone in -c (--fit's placement jumps with the context where the model's "
                  "GPU use is not monotone in -ngl, as for a hybrid model), so the figure is the edge the search's "
                  "plans bracket — not a promise that every shorter -c starts, nor that no longer one does")
    return Step("max context", words, f"{longest:,}" if longest else "none",
                "search.py longest_context, boundary.py largest_guided")


def keeps_every_layer(a: Allocation) -> bool:
    """The plan starts and llama-server --fit moved nothing to system memory and cut no context (its compromise,
    which says either, is empty): what the max context's "all on the GPU" reading asks of each context (plan.py)."""
    return fits(a) and not a.compromise


def fits_verdict(a: Allocation, model: ModelSpec | None = None) -> bool:
    """The plan's verdict is "fits" (not tight): what a fix that shortens the context aims for first. With ``model``
    (longest_context passes its own), verdict.verdict's whole rule: layers or experts held in RAM are tight."""
    return verdict(a, model) == "fits"


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
    line = tight_line(a)
    return {k: (line * d.capacity if tight and (d.kind != "cpu" or len(a.devices) == 1) else d.capacity)
            - d.total for k, d in zip(device_keys(d.name for d in a.devices), a.devices) if d.capacity > 0} or None


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
        keys = device_keys(t.name for t in devices)
        rooms = {k: t.capacity - f - guess.get(k, 0) - kept.get(t.name, 0)
                 for k, f, t in zip(keys, floor(model, weights, settings, targets), devices) if t.capacity > 0}
        return False, rooms or None
    a = runtime.allocate(model, weights, settings, targets)
    left = room(a)
    passed = fits(a)
    if left is not None and kept:
        # (kept_free names devices; every device of a name keeps the same bytes)
        held = {k: d.name for k, d in zip(device_keys(d.name for d in a.devices), a.devices) if d.name in kept}
        left = {k: r - kept.get(held.get(k, ""), 0) for k, r in left.items()}
        passed = passed and not (margin_held and any(left[k] < 0 for k in held if k in left))
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
