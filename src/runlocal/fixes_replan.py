"""The fixer behind fixes.py: a candidate change re-planned with the planner that made the plan (_Fixer.try_), kept
only where it improves the verdict or the limit it targets (_Fixer.improves), and said as a Fix ("before → after",
then the verdict and decode, on the fullest device). fixes.py holds the levers, each a function of a _Fixer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .boundary import Room, largest_guided, largest_predicted
from .runtimes import Allocation, Settings, Target, engine, get_runtime
from .runtimes.base import levers_of
from .search import fits_room, plan_fits
from .units import format_bytes
from .verdict import fits as _fits
from .verdict import gpus_fit as _gpus_fit
from .verdict import speed as _speed
from .verdict import verdict as _verdict
from .verdict import weights_held
from .weights import estimate, unsloth_command

if TYPE_CHECKING:
    from .plan import Plan


RANK = {"does_not_fit": 0, "tight": 1, "fits": 2}
WORD = {"does_not_fit": "does not fit", "tight": "tight", "fits": "fits"}
FASTER = 1.10           # a fix that only moves layers is kept when decode gets at least 10 % faster


@dataclass(frozen=True)
class Fix:
    title: str
    command: str
    effect: str
    cost: int            # what the user gives up: 0 nothing, 1 context/concurrency, 2 a bit of quality, 3 speed, 4 money

    def to_dict(self) -> dict[str, str]:
        return {"title": self.title, "command": self.command, "effect": self.effect}


@dataclass(frozen=True)
class _Tried:
    """A candidate change re-planned: its allocation, verdict and decode speed."""

    title: str
    settings: Settings
    change: str              # what it changes, before → after
    cost: int
    alloc: Allocation
    verdict: str
    decode: float | None
    command: str
    gains_context: bool = False    # it gives back context the runtime cut (the limit it targets), same verdict
    levers: int = 1                # changes made together: of two fixes of one cost, fewer changes rank first


def _layers_total(model) -> int:
    return model.n_layers + 1            # llama.cpp counts the output layer: -ngl n_layers+1 is all of them


def _peak(alloc: Allocation) -> str:
    """The fullest GPU (the largest share of what it may use; the first of equals), the one a fix's headroom is
    measured on: the first one may be the emptier of two (llama.cpp's -ts split, the output layer on the last)."""
    gpus = [d for d in alloc.devices if d.kind != "cpu"] or list(alloc.devices[:1])
    gpu = max(gpus, key=lambda d: d.total / d.capacity if d.capacity > 0 else 0.0)
    return f"{format_bytes(gpu.total)} of {format_bytes(gpu.capacity)} on {gpu.name}"


class _Fixer:
    """The plan, its runtime and targets, and the candidates tried against it."""

    def __init__(self, plan: Plan, targets: list[Target], asked: Settings | None = None):
        self.plan, self.targets, self.model = plan, targets, plan.model
        self.runtime = plan.planner or get_runtime(plan.settings.runtime)
        self.levers = levers_of(self.runtime)
        self.has_gpu = any(t.kind != "cpu" for t in targets)
        self.has_cpu = any(t.kind == "cpu" for t in targets)
        self.base = plan.settings
        # the runtime already made it run by moving layers or experts to system memory (llama.cpp --fit): the
        # fixes put every layer back on the GPU, so each is tried with all of them there
        ggml = engine(self.runtime.name).ggml
        self.all_on_gpu = bool(plan.allocation.compromise) and self.has_gpu and ggml
        if plan.allocation.compromise and not ggml and asked is not None:
            # as llama.cpp's path does, only what the runtime itself gave up is undone, the settings asked are kept:
            # SGLang with no context asked serves a shorter one than config.json's (runtimes/sglang.py
            # served_context), so the fixes start at the context it starts with; an asked context (transformers
            # offloading at 32,768, MLX past its working set) stays what the user asked
            self.base = self.runtime.defaults(self.model, asked, targets)
        if self.all_on_gpu:
            self.base = self.base.with_(n_gpu_layers=_layers_total(self.model), n_cpu_moe=0)
            if any(st.label == "layers (--fit)" for st in plan.allocation.steps) and self.base.llamacpp.tensor_split:
                # several GPUs: --fit wrote its own -ts and -ot (llamacpp_fit_devices); the user's would have kept it out
                self.base = self.base.with_(tensor_split=(), override_tensor=())
        self.tried: list[_Tried] = []
        # the weights as the runtime holds them: an FP8 checkpoint transformers dequantizes is held in bf16
        # (Allocation.weights_as_run), which a smaller format is measured against, not the stored FP8 bytes
        self.weights_held = weights_held(plan)[1]
        # the build cannot run flash attention on the GPU for this MLA cache (K ≠ V rows, runtimes/mla_flash.py):
        # neither "turn it on" nor a quantized V cache (which needs it) is offered; the plan's --explain says why
        blocked = getattr(self.runtime, "flash_blocked", None)
        self.flash_blocked: str | None = (blocked(self.model, plan.weights.quant, targets)
                                          if blocked is not None and self.has_gpu else None)

    # -- re-planning ---------------------------------------------------------------------------------------
    def weights(self, quant: str | None):
        return estimate(self.model, quant) if quant else self.plan.weights

    def allocate(self, s: Settings, quant: str | None = None, targets: list[Target] | None = None) -> Allocation:
        return self.runtime.allocate(self.model, self.weights(quant), s, targets or self.targets)

    def runs(self, s: Settings, quant: str | None = None) -> bool:
        return plan_fits(self.runtime, self.model, self.weights(quant), s, self.targets)

    def runs_room(self, s: Settings, quant: str | None = None) -> tuple[bool, Room]:
        """runs() and the room the plan leaves, for a guided search (search.fits_room)."""
        return fits_room(self.runtime, self.model, self.weights(quant), s, self.targets)

    def gpus_over(self, s: Settings, quant: str | None) -> bool:
        # llama.cpp: a GPU's bytes without its compute buffer already overflow it (LlamaCpp.floor), so -ngl is lower
        over = getattr(self.runtime, "surely_over", None) if hasattr(self.runtime, "floor") else None
        return bool(over and over(self.model, self.weights(quant), s, self.targets, gpus_only=True))

    def most_gpu_layers(self, s: Settings, quant: str | None = None, above: int | None = None) -> int | None:
        """The most layers on the GPU(s) with the rest of the model as ``s`` has it, where the whole plan then runs;
        with ``above``, None unless more than ``above`` layers fit (one plan at above + 1 says so: the GPUs' bytes
        grow with their layers, the monotonicity the search itself bisects on, which then starts there).
        Where the runtime has a floor (llama.cpp's bytes without compute buffers), the search probes where the
        exact room without compute buffers, less the compute buffer of the last plan, reaches zero
        (boundary.largest_predicted); else where the plans' rooms point (largest_guided). The answer is the same."""
        gpus = [t for t in self.targets if t.kind != "cpu"]
        floor = getattr(self.runtime, "floor", None)
        last_compute: list[float] = []

        def without_compute(k: int) -> float:
            assert floor is not None
            floors = floor(self.model, self.weights(quant), s.with_(n_gpu_layers=k, n_cpu_moe=0), self.targets)
            return min((t.capacity - f for t, f in zip(gpus, floors) if t.capacity > 0), default=0.0)

        def gpus_fit(k: int) -> tuple[bool, float | None]:
            new = s.with_(n_gpu_layers=k, n_cpu_moe=0)
            if self.gpus_over(new, quant):
                return False, None
            a = self.allocate(new, quant)
            rooms = [d.capacity - d.total for d in a.devices if d.kind != "cpu" and d.capacity > 0]
            room = min(rooms) if rooms and a.refusal is None else None
            if floor is not None and rooms:
                last_compute[:] = [without_compute(k) - min(rooms)]
            return _gpus_fit(a), room

        lo = 0
        if above is not None and above + 1 <= self.model.n_layers:
            lo = above + 1
            if floor is None and not gpus_fit(lo)[0]:
                return None
        if floor is not None and gpus:
            # from above + 1 taken to pass: an edge found higher passes, so above + 1 does too (the GPUs' bytes grow
            # with their layers); where the edge is above + 1 itself, its plan says whether it passes
            ngl = largest_predicted(lo, self.model.n_layers, lambda k: gpus_fit(k)[0],
                                    lambda k: without_compute(k) - (last_compute[0] if last_compute else 0.0),
                                    lo_passes=lo > 0)
            if ngl == lo and lo > 0 and not gpus_fit(lo)[0]:
                return None
        else:
            ngl = largest_guided(lo, self.model.n_layers, gpus_fit)
        return ngl if ngl is not None and _fits(self.allocate(s.with_(n_gpu_layers=ngl, n_cpu_moe=0), quant)) else None

    def try_(self, title: str, s: Settings, change: str, cost: int, quant: str | None = None,
             targets: list[Target] | None = None, command: str | None = None, gains_context: bool = False,
             levers: int = 1) -> None:
        """Re-plan with the change; keep it for judging only if the runtime starts with it."""
        targets = targets or self.targets
        if targets is self.targets and not self.runs(s, quant):
            return
        over = getattr(self.runtime, "surely_over", None)
        if targets is not self.targets and over is not None and over(self.model, self.weights(quant), s, targets):
            return        # other hardware (more GPUs): a lower bound of its bytes already overflows a device
        alloc = self.allocate(s, quant, targets)
        if not _fits(alloc):
            return
        decode = _speed(self.model, self.weights(quant), alloc, targets)[0].get("decode_tokens_per_s")
        self.tried.append(_Tried(title, s, change, cost, alloc, _verdict(alloc, self.model), decode,
                                 command or unsloth_command(self.model, self.plan.asked_quant, self.runtime, s),
                                 gains_context, levers))

    # -- judging ------------------------------------------------------------------------------------------
    def improves(self, t: _Tried) -> bool:
        """Better verdict; or, where the runtime gave something up, decode at least 10 % faster."""
        before = self.plan.verdict
        if RANK[t.verdict] > RANK.get(before, 0):
            return True
        if RANK[t.verdict] < RANK.get(before, 0):
            return False
        if t.gains_context:
            return True
        old = self.plan.speed.get("decode_tokens_per_s")
        return bool(self.plan.allocation.compromise and not t.alloc.compromise and t.decode and old
                    and t.decode >= FASTER * old)

    def effect(self, t: _Tried) -> str:
        parts = [t.change]
        if t.verdict != self.plan.verdict:
            parts.append(f"verdict {WORD[self.plan.verdict]} → {WORD[t.verdict]}")
        elif t.verdict == "tight":
            parts.append("still tight: " + ("some weights stay in system memory" if t.alloc.compromise
                                            else "above 90 % of the GPU"))
        old = self.plan.speed.get("decode_tokens_per_s")
        # a fix that gives up speed (cost 3: layers or experts to RAM) always says its decode, however small the change
        # (review19 section 13: 'Keep 48 of 49 layers on the GPU' moved gemma-3's tied output matrix, unsaid)
        if t.decode and old and self.plan.verdict != "does_not_fit" and (abs(t.decode - old) >= 0.05 * old
                                                                         or t.cost == 3):
            parts.append(f"decode {old:,.1f} → {t.decode:,.1f} tokens/s")
        elif t.decode and self.plan.verdict == "does_not_fit":
            parts.append(f"then {t.decode:,.1f} tokens/s decode")
        return "; ".join(parts) + f" ({_peak(t.alloc)})"

    def fixes(self) -> list[Fix]:
        seen: set[str] = set()
        out: list[tuple[tuple, Fix]] = []
        for t in self.tried:
            if t.command in seen or not self.improves(t):
                continue
            seen.add(t.command)
            key = (t.cost, t.levers, -RANK[t.verdict], -(t.decode or 0))
            out.append((key, Fix(t.title, t.command, self.effect(t), t.cost)))
        return [f for _, f in sorted(out, key=lambda kf: kf[0])]


__all__ = ["FASTER", "RANK", "WORD", "Fix", "_Fixer", "_Tried", "_layers_total", "_peak"]
