"""llama-server's --fit layer search (common/fit.cpp common_params_fit_impl, steps 3–4): the placements it tries,
what the probes of one launch answered at other contexts and slots, and a search cut short where every answer left
overflows the host. Used by LlamaCpp.fit and by Ollama (which leaves the placement to llama-server's --fit). Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from ..memo import IdMemo
from ..model.spec import ModelSpec
from .base import Target

_LAYER_OUTCOMES = IdMemo(512)


class LayerOutcomes:
    """What --fit's layer search answered for one launch, per context and slot count (each answer is the one search
    at that point would give: fit_layers' probes never read another point), where a search was cut short, and the
    compute buffers its plans held (a guess for Ollama's room_when_over, never a probe's choice). Earlier versions
    also implied a probe's verdict from placements tried at other points, assuming the GPU's use monotone in the
    placement: for a hybrid model it is not, so --fit's answer depended on which points had been asked before."""

    def __init__(self) -> None:
        # fit_layers' guide: the compute buffer last simulated per class of placements, context and slots
        self.compute: dict[tuple[tuple[bool, bool, bool], int, int], int] = {}
        # fit_layers' answer per (ctx, slots), once a search has ended there
        self.answers: dict[tuple[int, int], tuple[int, int]] = {}
        # where a search was cut short (Ollama.surely_over): the placement most on the GPU the answer can still be,
        # and a guess of the GPU's room under the margin at the placement before it (the furthest that failed)
        self.cut_short: dict[tuple[int, int], tuple[tuple[int, int], float | None, int]] = {}

    @staticmethod
    def at(model: ModelSpec, launch: tuple, ctx: int, slots: int) -> LaunchView:
        """The store of ``launch`` (everything but the context, slots and placement, hashable) seen from
        (ctx, slots), for fit_layers."""
        return LaunchView(_LAYER_OUTCOMES.get(model, launch, LayerOutcomes), ctx, slots)


class LaunchView:
    """One launch's LayerOutcomes seen from a context and slot count: what fit_layers asks and tells it."""

    def __init__(self, store: LayerOutcomes, ctx: int, slots: int) -> None:
        self.store, self.ctx, self.slots = store, ctx, slots
        self.compute = store.compute

    @property
    def answer(self) -> tuple[int, int] | None:
        """fit_layers' answer here, where a search has ended here before."""
        return self.store.answers.get((self.ctx, self.slots))

    @answer.setter
    def answer(self, value: tuple[int, int]) -> None:
        self.store.answers[(self.ctx, self.slots)] = value

    @property
    def at_least(self) -> tuple[int, int] | None:
        """The answer where known, else the placement most on the GPU it can be where a search was cut short."""
        cut = self.store.cut_short.get((self.ctx, self.slots))
        return self.answer or (cut[0] if cut else None)

    @property
    def cut_short_guess(self) -> tuple[float | None, int] | None:
        """Where a search was cut short: (the GPU's room under the margin at the placement that failed last, or
        None; the host's compute buffer in the last plan the search made)."""
        cut = self.store.cut_short.get((self.ctx, self.slots))
        return (cut[1], cut[2]) if cut else None

    def cut_short(self, placement: tuple[int, int], room: float | None, host_buffer: int) -> None:
        self.store.cut_short[(self.ctx, self.slots)] = (placement, room, host_buffer)


class FitSettled(Exception):
    """Raised by FitProbes.probe where its ``settled`` says every placement the search can still answer settles
    the caller's question (Ollama.surely_over: each leaves the host over its RAM)."""


class FitProbes:
    """The probes of one --fit layer search (common/fit.cpp steps 3–4 on one GPU): whether placement (-ngl, experts
    of how many layers in system memory) keeps the margin and the room it leaves, each from a plan (run, ok, room)
    made once; the compute buffer of each plan (bound − room, with hopeless the bytes without compute buffers) is
    kept for predicted, a guess for callers that cut the search short. Shared by fit_layers and by a caller that
    asks about the same search before it runs (Ollama.surely_over): fit_layers' probe order depends on this
    point alone, so the answer does not depend on who asked first, or what."""

    def __init__(self, model: ModelSpec, run, ok, hopeless=None, known=None, room=None) -> None:
        self.n = model.n_layers
        self.moe = bool(model.n_experts)
        self.run, self.ok, self.hopeless, self.known, self.room = run, ok, hopeless, known, room
        self.compute: dict = known.compute if known is not None else {}
        self.point = (known.ctx, known.slots) if known is not None else (0, 0)
        # settled(i): every placement from order()[i] on settles the caller's question; asked after each failing
        # probe with i just past the furthest one failed so far (the searches keep one bracket: a placement that
        # fails rules out itself and every one before it in the order, so the answer lies past it)
        self.settled: Callable[[int], bool] | None = None
        self.last_plan = None          # the last plan run (a guide for a caller that cut the search short)
        self._index: dict[tuple[int, int], int] = {}
        self._probed: dict[tuple[int, int], tuple[bool, float]] = {}
        self.failed_upto = -1

    def cls(self, ngl: int, ncmoe: int) -> tuple[bool, bool, bool]:
        return ngl == 0, ngl > self.n, ncmoe == 0

    def probe(self, ngl: int, ncmoe: int) -> tuple[bool, float]:
        """fit.cpp's get_memory_for_layers at this placement: (keeps the margin, room under it), planned once per
        search. Never taken from other contexts or slots: fit_layers' next probe depends on the room."""
        got = self._probed.get((ngl, ncmoe))
        if got is None:
            plan = self.last_plan = self.run(ngl, ncmoe)
            passed = bool(self.ok(plan))
            room = self.room(plan) if self.room is not None else (0 if passed else -1)
            if self.hopeless is not None and self.room is not None:    # the guide of predicted (a guess only)
                self.compute[(self.cls(ngl, ncmoe), self.point[0], self.point[1])] = self.hopeless(ngl, ncmoe) - room
            got = self._probed[(ngl, ncmoe)] = (passed, room)
        if not got[0] and self.settled is not None:
            self._check_settled(ngl, ncmoe)
        return got

    def passes(self, ngl: int, ncmoe: int) -> bool:
        """Whether the placement keeps the margin, where its room is not needed: a bytes-without-compute-buffers
        bound below 0 (hopeless) fails it unplanned — the plan would fail too, so the answer is unchanged."""
        got = self._probed.get((ngl, ncmoe))
        if got is None and self.hopeless is not None and self.hopeless(ngl, ncmoe) < 0:
            if self.settled is not None:
                self._check_settled(ngl, ncmoe)
            return False
        return self.probe(ngl, ncmoe)[0]

    def _check_settled(self, ngl: int, ncmoe: int) -> None:
        if not self._index:
            self._index = {p: i for i, p in enumerate(self.order())}
        i = self._index[(ngl, ncmoe)]
        if i > self.failed_upto:
            self.failed_upto = i
            if i + 1 < len(self._index) and self.settled is not None and self.settled(i + 1):
                raise FitSettled()

    def predicted(self, ngl: int, ncmoe: int) -> float:
        guess = self._compute_near(self.cls(ngl, ncmoe))
        return (self.hopeless(ngl, ncmoe) if self.hopeless else 0) - guess

    def _compute_near(self, cls: tuple[bool, bool, bool]) -> float:
        """The compute buffer last simulated in this class of placements at the nearest context and slots (the
        buffer grows with them), else in any class; 0 before any plan. A guide only."""
        if not self.compute:
            return 0
        ctx, slots = self.point
        same = [k for k in self.compute if k[0] == cls] or list(self.compute)
        near = min(same, key=lambda k: (k[2] != slots, abs(k[1] * max(k[2], 1) - ctx * max(slots, 1))))
        return self.compute[near]

    def order(self) -> list[tuple[int, int]]:
        """Every placement fit_layers can answer, from the most on the GPU to the least: all layers; for a MoE
        model the experts of 1, 2, … n layers in system memory, then the layers given back from the front with
        every expert in system memory; for a dense model the layers given back. Each step only moves tensors from
        the GPU to the host (so the GPU's bytes without compute buffers never grow along it and the host's never
        shrink: tests/unit/test_plan_bounds.py). fit_layers answers a placement that passes, or the last one."""
        n = self.n
        if self.moe:
            return [(n + 1, m) for m in range(n + 1)] + [(g, n) for g in range(n, -1, -1)]
        return [(g, 0) for g in range(n + 1, -1, -1)]


def fit_layers(model: ModelSpec, run, ok, hopeless=None, known=None, room=None,
               probes: FitProbes | None = None) -> tuple[int, int]:
    """common/fit.cpp common_params_fit_impl, steps 3–4 on one GPU: (-ngl, experts of how many layers in system
    memory). All layers if the device keeps its margin; else, for a MoE model, every layer on the GPU with the
    experts of as few layers as possible in system memory (dense-only layers converted back to full ones), and
    when even all experts out is too much, the dense-only layers filled back to front; for a dense model the
    layers filled back to front. run(ngl, n_cpu_moe) plans it, ok(plan) says whether the margin is kept, room(plan)
    the bytes it leaves under the margin (llama.cpp's targets[id] − mem[id]).
    (Not modelled: the finer overflow of part of one more layer's FFN, LAYER_FRACTION_ATTN/UP/GATE.)

    The probes are fit.cpp's own (ggml-org/llama.cpp common/fit.cpp at 08033df, "optimize the number of layers per device
    using the method of false position" and step 4's loop): each search starts from a bracket whose two ends are
    planned, steps by delta × (target − mem_low) / (mem_high − mem_low) clamped to [1, delta − 1], and keeps the end
    the probe replaces. For a hybrid model the GPU's use is not monotone in the layers (the compute buffer follows
    which recurrent / attention layers are on it), so another probe order can end elsewhere: the order here is a
    function of this launch, context and slots alone, whatever was asked before in the process (the answers,
    guides and verdicts learned at other points are never used to choose a probe;
    tests/unit/test_fit_history.py)."""
    n = model.n_layers
    p = probes or FitProbes(model, run, ok, hopeless, known, room)
    if p.passes(n + 1, 0):                         # step 1: every layer, every expert on the GPU
        return n + 1, 0

    def room_of(ngl: int, ncmoe: int) -> Callable[[], float]:     # planned where a step reads it
        return partial(_room_at, p, (ngl, ncmoe))

    if model.n_experts:
        # step 3's high end for MoE: every layer dense-only (all experts in system memory); if it fits, step 4
        # converts dense-only layers back to full ones between it (low) and every layer full (high, failed)
        if p.passes(n + 1, n):
            keep = false_position(0, n, room_of(n + 1, n), room_of(n + 1, 0), lambda k: (n + 1, n - k), p)
            return n + 1, n - keep
        return false_position(0, n + 1, room_of(0, n), room_of(n + 1, n), lambda g: (g, n), p), n
    return false_position(0, n + 1, room_of(0, 0), room_of(n + 1, 0), lambda g: (g, 0), p), 0


def false_position(lo: int, hi: int, room_lo: Callable[[], float], room_hi: Callable[[], float],
                   placement: Callable[[int], tuple[int, int]], p: FitProbes) -> int:
    """common/fit.cpp's layer loop (steps 3 and 4 alike): lo is taken to fit (fit.cpp's low end: its memory is
    measured, never compared), hi does not; the room is target − mem. Returns the low end once the bracket is one
    wide. C's unsigned step: int64 delta × (target − mem) / headroom truncated, then clamped to [1, delta − 1];
    a headroom ≤ 0 ("mem_high == mem on an already-full device") steps delta − 1. The rooms are planned only where
    a step reads them: with delta 2 the step is 1 whatever they are, and that last probe needs only its verdict."""
    while hi - lo > 1:
        delta = hi - lo
        if delta == 2:
            step = 1
        else:
            r_lo = room_lo()
            headroom = r_lo - room_hi()                # mem_high − mem
            if headroom > 0:
                # C's int64 division truncates toward zero: a room below zero by less than one step's share gives 0
                # (clamped up to 1); a quotient ≤ −1 wraps in uint32_t to ~2^32 (clamped down to delta − 1)
                scaled, h = delta * int(r_lo), int(headroom)
                quotient = scaled // h if scaled >= 0 else -(-scaled // h)
                step = quotient if quotient >= 0 else delta - 1
            else:
                step = delta - 1
        g = lo + min(max(step, 1), delta - 1)
        at = placement(g)
        if p.passes(*at):
            lo, room_lo = g, partial(_room_at, p, at)
        else:
            hi, room_hi = g, partial(_room_at, p, at)
    return lo


def _room_at(p: FitProbes, at: tuple[int, int]) -> float:
    return p.probe(*at)[1]


def fit_answer(model: ModelSpec, probes: FitProbes) -> tuple[int, int]:
    """fit_layers' answer, searched once per launch, context and slots (kept in LayerOutcomes)."""
    known = probes.known
    answer = known.answer if known is not None else None
    if answer is None:
        answer = fit_layers(model, probes.run, probes.ok, probes=probes)
        if known is not None:
            known.answer = answer
    return answer


def fit_overflows_host(model: ModelSpec, probes: FitProbes, host_over: Callable[[int, int], bool]) -> int | None:
    """Whether every answer --fit can still give leaves the host over its RAM (host_over(ngl, n_cpu_moe): the host's
    bytes without compute buffers at that placement are over it), asked while the search runs: the index in
    probes.order() of the first placement left where so, else None (the search ran to its answer, which is kept).
    The host's floor never shrinks along the order and a failing probe puts the answer past it (FitProbes)."""
    order = probes.order()
    known = probes.known
    if known is not None and known.at_least is not None:
        i = order.index(known.at_least)
        return i if host_over(*order[i]) else None
    if host_over(*order[0]):
        return 0
    probes.settled = lambda i: host_over(*order[i])
    try:
        fit_answer(model, probes)
    except FitSettled:
        return probes.failed_upto + 1
    finally:
        probes.settled = None
    return None


def gpu_side(targets: list[Target]) -> tuple[Target, ...]:
    """The targets with the host's size left out: a key for what --fit decides, which reads the GPUs only (the
    GPUs' totals and floors; the host's buffers are counted but never compared), so the RAM sizes
    settle_assumed_ram tries share one search."""
    return tuple(replace(t, capacity=0, total=0) if t.kind == "cpu" else t for t in targets)


def with_estimate_short(compromise: str | None, devices, margin: int) -> str | None:
    """``compromise`` (LlamaCpp._compromise's words) and, where --fit shortened an unset context on one GPU and the
    plan leaves that GPU less than ``margin`` free, why (review23 #16: "to leave 1 GiB free" beside "free 0.89").
    fit.cpp's step 2 sets n_ctx by a linear interpolation between the use it measured at the minimum and at the
    trained context and, with one device, returns at once ("entire model can be fit by reducing context", common/fit.cpp
    common_params_fit_impl): where the use grows faster than linearly past that point, the launch keeps less than the
    margin, and nothing measures it again."""
    gpus = [d for d in devices if d.kind != "cpu"]
    short = [d for d in gpus if d.capacity > 0 and d.capacity - d.total < margin]
    if not compromise or "context shortened" not in compromise or len(gpus) != 1 or not short:
        return compromise
    (d,) = short
    return (f"{compromise} — its context is a linear estimate between two measured uses, not measured again on one "
            f"GPU: {(d.capacity - d.total) / 2**30:.2f} GiB is left on {d.name}")
