"""llama-server's --fit layer search (common/fit.cpp common_params_fit_impl, steps 3–4): the placements it tries,
what the probes of one launch answered at other contexts and slots, and a search cut short where every answer left
overflows the host. Used by LlamaCpp.fit and by Ollama (which leaves the placement to llama-server's --fit). Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..boundary import largest_guided, largest_predicted
from ..memo import IdMemo
from ..model.spec import ModelSpec
from .base import Target

_LAYER_OUTCOMES = IdMemo(512)


class LayerOutcomes:
    """What --fit's layer probes (does placement (-ngl, --n-cpu-moe) keep the margin on the GPU?) answered for one
    launch at other contexts and slot counts, so that a probe whose answer is implied needs no graph simulation.

    The GPU's bytes grow with the context and the slots (more cells, wider graph), with the layers on it and shrink
    with the experts kept in RAM — the monotonicity each search already bisects on, one axis at a time. Two
    placements are only compared within one class: -ngl 0 (the whole graph's compute buffer on the GPU, op offload)
    apart from one layer or more, and no experts in RAM apart from some (their weights are then copied into the
    compute buffer). A placement that passed at a point at least as heavy passes; one that failed at a point at
    least as light fails."""

    LIMIT = 256          # records kept per launch (a search makes a few dozen)

    def __init__(self) -> None:
        self.records: list[tuple[int, int, int, int, bool]] = []   # (ctx, slots, ngl, n_cpu_moe, passed)
        # fit_layers' guide: the compute buffer last simulated per class of placements, context and slots
        self.compute: dict[tuple[tuple[bool, bool, bool], int, int], int] = {}
        # fit_layers' answer per (ctx, slots), once a search has ended there (the probes it made are recorded above)
        self.answers: dict[tuple[int, int], tuple[int, int]] = {}
        # where a search was cut short (Ollama.surely_over): the placement most on the GPU the answer can still be,
        # and a guess of the GPU's room under the margin at the placement before it (the furthest that failed)
        self.cut_short: dict[tuple[int, int], tuple[tuple[int, int], float | None, int]] = {}

    def implied(self, ctx: int, slots: int, ngl: int, ncmoe: int) -> bool | None:
        cls = (ngl == 0, ncmoe == 0)
        for c, p, g, m, passed in self.records:
            if (g == 0, m == 0) != cls:
                continue
            if passed and ctx <= c and slots <= p and ngl <= g and ncmoe >= m:
                return True
            if not passed and ctx >= c and slots >= p and ngl >= g and ncmoe <= m:
                return False
        return None

    def record(self, ctx: int, slots: int, ngl: int, ncmoe: int, passed: bool) -> None:
        if len(self.records) < self.LIMIT:
            self.records.append((ctx, slots, ngl, ncmoe, passed))

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

    def implied(self, ngl: int, ncmoe: int) -> bool | None:
        return self.store.implied(self.ctx, self.slots, ngl, ncmoe)

    def record(self, ngl: int, ncmoe: int, passed: bool) -> bool:
        self.store.record(self.ctx, self.slots, ngl, ncmoe, passed)
        return passed

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
    """Raised by FitProbes.passes where its ``settled`` says every placement the search can still answer settles
    the caller's question (Ollama.surely_over: each leaves the host over its RAM)."""


class FitProbes:
    """The probes of one --fit layer search (common/fit.cpp steps 3–4 on one GPU) and what they learned: whether
    placement (-ngl, experts of how many layers in system memory) keeps the margin, from the launch's answers at
    other contexts and slots (known), the bound (hopeless) or a plan (run, ok), recorded in known; and the compute
    buffer of the last plan simulated per class of placements, the guide of fit_layers' predictions. Shared by
    fit_layers and by a caller that asks about the same search before it runs (Ollama.surely_over): a probe asked
    by either is answered the same way, so the search's answer does not depend on who asked first."""

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
        self.failed_upto = -1

    def cls(self, ngl: int, ncmoe: int) -> tuple[bool, bool, bool]:
        return ngl == 0, ngl > self.n, ncmoe == 0

    def passes(self, ngl: int, ncmoe: int) -> bool:
        implied = self.known.implied(ngl, ncmoe) if self.known else None
        if implied is not None:
            if not implied and self.settled is not None:
                self._check_settled(ngl, ncmoe)
            return implied
        bound = self.hopeless(ngl, ncmoe) if self.hopeless else None
        if bound is not None and bound < 0:
            answer = False
        else:
            plan = self.last_plan = self.run(ngl, ncmoe)
            answer = self.ok(plan)
            if bound is not None and self.room is not None:
                self.compute[(self.cls(ngl, ncmoe), self.point[0], self.point[1])] = bound - self.room(plan)
        answer = self.known.record(ngl, ncmoe, answer) if self.known else answer
        if not answer and self.settled is not None:
            self._check_settled(ngl, ncmoe)
        return answer

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
    layers filled back to front. run(ngl, n_cpu_moe) plans it, ok(plan) says whether the margin is kept.
    (Not modelled: the finer overflow of part of one more layer's FFN, LAYER_FRACTION_ATTN/UP/GATE.)
    hopeless(ngl, n_cpu_moe), when given, is the room the bytes without compute buffers leave (LlamaCpp.floor;
    below 0: ok would fail, no plan needed); known, the launch's answers at other contexts and slot counts
    (LayerOutcomes.at); room(plan), the bytes the plan leaves under the margin (with hopeless, the plan's compute
    buffer is their difference). ``probes``: the same, already made (FitProbes), and perhaps asked already.

    The searches probe where the predicted room reaches zero (boundary.largest_predicted): the exact room without
    compute buffers (hopeless, cheap) less the compute buffer of the last plan simulated in the same class of
    placements (known.compute keeps them across this launch's contexts and slot counts). Within a class the compute
    buffer barely moves with the placement, so the edge is usually planned once from each side. A guide only: the
    verdicts decide, and the answer is the bisection's."""
    n = model.n_layers
    p = probes or FitProbes(model, run, ok, hopeless, known, room)
    passes, predicted = p.passes, p.predicted
    if passes(n + 1, 0):
        return n + 1, 0
    if p.hopeless is None:        # no cheap bound to predict with: the search guided by the plans' rooms
        return _fit_layers_guided(model, p.run, p.ok, p.known, p.room)
    if model.n_experts:
        # every expert in system memory (keep 0) is asked last, only where no layer's experts fit: a placement with
        # more on the GPU that passes implies it passes (the same monotonicity the search bisects on)
        keep = largest_predicted(0, n, lambda k: passes(n + 1, n - k), lambda k: predicted(n + 1, n - k),
                                 lo_passes=True)
        if keep or passes(n + 1, n):
            return n + 1, n - (keep or 0)
        # (-ngl 0 is taken to pass unasked: whether or not it does, the answer below is 0 when nothing above does)
        return largest_predicted(0, n + 1, lambda g: passes(g, n), lambda g: predicted(g, n), lo_passes=True) or 0, n
    return largest_predicted(0, n + 1, lambda g: passes(g, 0), lambda g: predicted(g, 0), lo_passes=True) or 0, 0


def _fit_layers_guided(model: ModelSpec, run, ok, known=None, room=None) -> tuple[int, int]:
    """fit_layers without a bound to predict from: each probe planned, the search guided by the room it leaves."""
    n = model.n_layers

    def passes(ngl: int, ncmoe: int) -> tuple[bool, float | None]:
        implied = known.implied(ngl, ncmoe) if known else None
        if implied is not None:
            return implied, None
        plan = run(ngl, ncmoe)
        answer, left = ok(plan), (room(plan) if room else None)
        return (known.record(ngl, ncmoe, answer) if known else answer), left

    if model.n_experts:
        keep = largest_guided(0, n, lambda k: passes(n + 1, n - k))
        if keep is not None:
            return n + 1, n - keep
        return largest_guided(0, n + 1, lambda g: passes(g, n)) or 0, n
    return largest_guided(0, n + 1, lambda g: passes(g, 0)) or 0, 0


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
