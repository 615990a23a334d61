"""Changes that make a plan fit, each computed by re-planning, ranked by what the user gives up.

Only the levers the plan's runtime has are tried (runtimes.base.Levers): a GGUF quant or -ngl for
llama.cpp and Ollama, gpu_memory_utilization for vLLM but mem_fraction_static for SGLang,
bitsandbytes for transformers, mlx_lm.convert -q for MLX. Cost: 1 = less context or concurrency,
2 = some quality (quantized KV or weights) or headroom, 3 = speed (layers on the CPU), 4 = hardware.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InputError
from .runtimes import Settings, Target, get_runtime
from .runtimes.base import PARALLEL_AUTO, largest, levers_of
from .search import longest_context, plan_fits
from .units import format_bytes
from .verdict import fits as _fits
from .verdict import gpus_fit as _gpus_fit
from .weights import estimate, is_gguf_quant

if TYPE_CHECKING:
    from .plan import Plan


@dataclass(frozen=True)
class Fix:
    title: str
    command: str
    effect: str
    cost: int            # what the user gives up: 1 context/concurrency, 2 a bit of quality, 3 speed, 4 money

    def to_dict(self) -> dict[str, str]:
        return {"title": self.title, "command": self.command, "effect": self.effect}


def _most_gpu_layers(model, s: Settings, try_settings, quant: str | None = None, gpus_over=None) -> int | None:
    def gpus_fit(k: int) -> bool:
        new = s.with_(n_gpu_layers=k)
        if gpus_over is not None and gpus_over(new, quant):
            return False
        return _gpus_fit(try_settings(new, quant)[0])

    ngl = largest(0, model.n_layers, gpus_fit)
    return ngl if ngl is not None and _fits(try_settings(s.with_(n_gpu_layers=ngl), quant)[0]) else None


def _peak(plan_alloc) -> str:
    gpu = next((d for d in plan_alloc.devices if d.kind != "cpu"), plan_alloc.devices[0])
    return f"{format_bytes(gpu.total)} of {format_bytes(gpu.capacity)} on {gpu.name}"


def _smaller_quants(ladder: tuple[str, ...], current: str) -> tuple[str, ...]:
    key = current.upper()
    upper = tuple(q.upper() for q in ladder)
    return ladder[upper.index(key) + 1:] if key in upper else ladder


def suggest_fixes(plan: Plan, targets: list[Target]) -> list[Fix]:
    """Each lever of the plan's runtime tried by re-planning with the planner that made the plan."""
    model, s = plan.model, plan.settings
    runtime = plan.planner or get_runtime(s.runtime)
    levers = levers_of(runtime)
    fixes: list[Fix] = []
    max_context = plan.max_context
    if plan.allocation.compromise and any(t.kind != "cpu" for t in targets):
        # the runtime already made it run by moving layers to system memory (llama.cpp --fit): a fix is what
        # puts every layer back on the GPU, so each is tried with all of them there (not on a CPU-only machine)
        s = s.with_(n_gpu_layers=model.n_layers + 1, n_cpu_moe=0)
        max_context = longest_context(runtime, model, plan.weights, s, targets, hi=s.ctx or 256)

    def try_settings(new: Settings, quant: str | None = None):
        weights = estimate(model, quant) if quant else plan.weights
        return runtime.allocate(model, weights, new, targets), weights

    def gpus_over(new: Settings, quant: str | None = None) -> bool:
        # llama.cpp: a GPU's bytes without its compute buffer already overflow it (LlamaCpp.floor), so -ngl is lower
        surely_over = getattr(runtime, "surely_over", None)
        if not hasattr(runtime, "floor") or surely_over is None:
            return False
        return surely_over(model, estimate(model, quant) if quant else plan.weights, new, targets,
                           gpus_only=True)

    def runs(new: Settings, weights=None) -> bool:
        # verdict.fits of the re-plan, skipped where the runtime's lower bound already overflows (search.plan_fits)
        return plan_fits(runtime, model, weights or plan.weights, new, targets)

    def add(title: str, new: Settings, cost: int, effect_prefix: str = "") -> None:
        if runs(new):
            alloc, _ = try_settings(new)
            fixes.append(Fix(title, runtime.command(model, new), f"{effect_prefix}fits: {_peak(alloc)}", cost))

    # 1. shorter context
    if max_context and max_context < (s.ctx or 0):
        new = s.with_(ctx=max_context)
        alloc, _ = try_settings(new)
        fixes.append(Fix(f"Reduce context to {max_context:,}", runtime.command(model, new),
                         f"context {s.ctx:,} → {max_context:,}; {_peak(alloc)}", 1))
    # 2. fewer parallel sequences
    if s.parallel > 1:
        n = largest(1, s.parallel - 1, lambda k: plan_fits(runtime, model, plan.weights, s.with_(parallel=k), targets))
        if n:
            add(f"Serve {n} parallel request{'s' if n > 1 else ''} instead of {s.parallel}", s.with_(parallel=n), 1,
                effect_prefix=f"parallel {s.parallel} → {n}; ")
    elif s.parallel == PARALLEL_AUTO:
        # llama-server's default 4 slots share one cache of -c cells: one slot keeps the context and drops the
        # other slots' sliding windows, logits and graph rows (runtimes/llamacpp.py slots)
        from .runtimes.llamacpp import AUTO_SLOTS

        add("Serve one request at a time (--parallel 1)", s.with_(parallel=1), 1,
            effect_prefix=f"parallel auto ({AUTO_SLOTS} slots) → 1; ")
    # 3. quantized KV cache (llama.cpp needs flash attention for a quantized V cache)
    for kv in levers.kv_cache_types:
        if s.cache_type_k == kv:
            continue
        new = s.with_(cache_type_k=kv, cache_type_v=kv, flash_attn="on" if s.flash_attn == "off" else s.flash_attn)
        if runs(new):
            alloc, _ = try_settings(new)
            fixes.append(Fix(f"Quantize the KV cache to {kv}", runtime.command(model, new),
                             f"KV {format_bytes(sum(d.kv_cache for d in plan.allocation.devices))} → "
                             f"{format_bytes(sum(d.kv_cache for d in alloc.devices))}; {_peak(alloc)}", 2))
            break
    # 4. smaller weights, in the formats this runtime loads
    for q in _smaller_quants(levers.weight_quants, plan.weights.quant):
        try:
            w = estimate(model, q)
            smaller_runs = w.total < plan.weights.total and runs(s.with_(quant=q), w)
        except InputError:          # a format this model cannot take (e.g. a row size the blocks do not divide)
            continue
        if smaller_runs:
            alloc, _ = try_settings(s.with_(quant=q), q)
            fixes.append(Fix(_quant_title(q), runtime.command(model, s.with_(quant=q)),
                             f"weights {format_bytes(plan.weights.total)} → {format_bytes(w.total)}; {_peak(alloc)}", 2))
            break
    # 5. a higher memory budget for the KV pool
    if levers.budget:
        current = getattr(s, levers.budget, None) or 0.9
        if current < levers.budget_max:
            add(f"Raise {levers.budget} to {levers.budget_max}", s.with_(**{levers.budget: levers.budget_max}), 2,
                effect_prefix=f"{levers.budget} {current} → {levers.budget_max}; ")
    # 6. partial offload: keep some layers on the CPU
    if levers.layer_offload and not plan.allocation.compromise and any(t.kind == "cpu" for t in targets) \
            and any(t.kind != "cpu" for t in targets):
        ngl = _most_gpu_layers(model, s, try_settings, gpus_over=gpus_over)
        current_ngl = s.n_gpu_layers if s.n_gpu_layers is not None and s.n_gpu_layers >= 0 else model.n_layers + 1
        if ngl is not None and ngl < current_ngl:
            new = s.with_(n_gpu_layers=ngl)
            alloc, _ = try_settings(new)
            fixes.append(Fix(f"Offload {ngl} of {model.n_layers} layers to the GPU", runtime.command(model, new),
                             f"{ngl} GPU layers: slower decode (CPU layers run at RAM bandwidth); {_peak(alloc)}", 3))
    # 7. more GPUs, tensor parallel
    if levers.tensor_parallel and targets[0].kind != "cpu":
        for tp in (2, 4, 8):
            if tp > s.tp:
                more = [targets[0]] * tp + [t for t in targets if t.kind == "cpu"]
                alloc = runtime.allocate(model, plan.weights, s.with_(tp=tp), more)
                if _fits(alloc):
                    tokens = f"{alloc.kv_cache_tokens:,} KV tokens" if alloc.kv_cache_tokens else "fits"
                    fixes.append(Fix(f"Use {tp} GPUs with tensor parallelism", runtime.command(model, s.with_(tp=tp)),
                                     f"{tokens} across {tp} × {targets[0].name}", 4))
                    break
    # 8. nothing above fits alone: a smaller quant together with a shorter context, or with CPU layers
    if not any(f.cost <= 3 for f in fixes):
        fixes += _combined(plan, targets, runtime, levers, try_settings, gpus_over)
    return fixes


def _quant_title(q: str) -> str:
    article = "an" if q[:1].upper() in "AEFHILMNORSX" else "a"     # as the letter is said: an IQ4_XS, a Q4_K_M
    return f"Use {article} {q} GGUF" if is_gguf_quant(q) else f"Quantize the weights to {q}"


def _combined(plan: Plan, targets, runtime, levers, try_settings, gpus_over=None) -> list[Fix]:
    model, s = plan.model, plan.settings
    out: list[Fix] = []
    granule, floor = 256, 2048
    for q in _smaller_quants(levers.weight_quants, plan.weights.quant):
        try:
            _, w = try_settings(s.with_(quant=q), q)
        except InputError:
            continue
        if w.total >= plan.weights.total:
            continue
        if s.ctx and s.ctx > floor and not any(f.cost == 3 and "context" in f.effect for f in out):
            ctx = longest_context(runtime, model, w, s.with_(quant=q), targets, lo=floor, hi=s.ctx - granule,
                                  granule=granule)
            if ctx:
                new = s.with_(quant=q, ctx=ctx)
                a, _ = try_settings(new, q)
                out.append(Fix(f"{_quant_title(q)} and reduce context to {ctx:,}", runtime.command(model, new),
                               f"weights {format_bytes(plan.weights.total)} → {format_bytes(w.total)}, context "
                               f"{s.ctx:,} → {ctx:,}; {_peak(a)}", 3))
        if levers.layer_offload and not any("layers" in f.title for f in out) \
                and any(t.kind == "cpu" for t in targets) and any(t.kind != "cpu" for t in targets):
            ngl = _most_gpu_layers(model, s.with_(quant=q), try_settings, q, gpus_over)
            if ngl:
                new = s.with_(quant=q, n_gpu_layers=ngl)
                a, _ = try_settings(new, q)
                out.append(Fix(f"{_quant_title(q)} with {ngl} of {model.n_layers} layers on the GPU",
                               runtime.command(model, new),
                               f"weights {format_bytes(plan.weights.total)} → {format_bytes(w.total)}, the rest of the "
                               f"layers on the CPU (slower decode); {_peak(a)}", 3))
        if len(out) >= 2:
            break
    return out


__all__ = ["Fix", "suggest_fixes"]
