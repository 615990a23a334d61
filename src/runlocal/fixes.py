"""Changes that make a plan fit, each computed by re-planning, ranked by what the user gives up."""

from __future__ import annotations

from dataclasses import replace

from .plan import GGUF_QUANTS, Fix, Plan, _fits, estimate, is_gguf_quant
from .runtimes.base import largest
from .runtimes import Settings, Target, get_runtime
from .units import format_bytes


def _peak(plan_alloc) -> str:
    gpu = next((d for d in plan_alloc.devices if d.kind != "cpu"), plan_alloc.devices[0])
    return f"{format_bytes(gpu.total)} of {format_bytes(gpu.capacity)} on {gpu.name}"


def suggest_fixes(plan: Plan, targets: list[Target]) -> list[Fix]:
    model, s = plan.model, plan.settings
    runtime = get_runtime(s.runtime)
    fixes: list[Fix] = []

    def try_settings(new: Settings, quant: str | None = None):
        weights = estimate(model, quant) if quant else plan.weights
        return runtime.allocate(model, weights, new, targets), weights

    def add(title: str, new: Settings, cost: int, quant: str | None = None, effect_prefix: str = ""):
        alloc, _ = try_settings(new, quant)
        if _fits(alloc):
            cmd = runtime.command(model, new if quant is None else new.with_(quant=quant))
            fixes.append(Fix(title, cmd, f"{effect_prefix}fits: {_peak(alloc)}", cost))

    # 1. shorter context
    if plan.max_context and plan.max_context < (s.ctx or 0):
        new = s.with_(ctx=plan.max_context)
        alloc, _ = try_settings(new)
        fixes.append(Fix(f"Reduce context to {plan.max_context:,}", runtime.command(model, new),
                         f"context {s.ctx:,} → {plan.max_context:,}; {_peak(alloc)}", 1))
    # 2. fewer parallel sequences
    if s.parallel > 1:
        n = largest(1, s.parallel - 1, lambda k: _fits(try_settings(s.with_(parallel=k))[0]))
        if n:
            add(f"Serve {n} parallel request{'s' if n > 1 else ''} instead of {s.parallel}", s.with_(parallel=n), 1,
                effect_prefix=f"parallel {s.parallel} → {n}; ")
    # 3. quantized KV cache
    kv_options = ("fp8",) if runtime.pools_kv else ("q8_0", "q4_0")
    for kv in kv_options:
        if s.cache_type_k == kv:
            continue
        new = s.with_(cache_type_k=kv, cache_type_v=kv, flash_attn="on" if s.flash_attn == "off" else s.flash_attn)
        alloc, _ = try_settings(new)
        if _fits(alloc):
            fixes.append(Fix(f"Quantize the KV cache to {kv}", runtime.command(model, new),
                             f"KV {format_bytes(sum(d.kv_cache for d in plan.allocation.devices))} → "
                             f"{format_bytes(sum(d.kv_cache for d in alloc.devices))}; {_peak(alloc)}", 2))
            break
    # 4. a smaller weight quant (llama.cpp GGUF ladder)
    if not runtime.pools_kv:
        current = plan.weights.quant.upper()
        ladder = GGUF_QUANTS[GGUF_QUANTS.index(current) + 1:] if current in GGUF_QUANTS else GGUF_QUANTS[1:]
        for q in ladder:
            if not is_gguf_quant(q):
                continue
            alloc, w = try_settings(s, q)
            if _fits(alloc):
                fixes.append(Fix(f"Use a {q} GGUF", runtime.command(model, s).replace(".gguf", f"-{q}.gguf", 1),
                                 f"weights {format_bytes(plan.weights.total)} → {format_bytes(w.total)}; {_peak(alloc)}", 2))
                break
    # 5. partial offload (llama.cpp): keep some layers on the CPU
    if not runtime.pools_kv and any(t.kind == "cpu" for t in targets) and any(t.kind != "cpu" for t in targets):
        ngl = largest(0, model.n_layers, lambda k: _fits(try_settings(s.with_(n_gpu_layers=k))[0]))
        if ngl is not None and ngl < (s.n_gpu_layers or 0):
            new = s.with_(n_gpu_layers=ngl)
            alloc, _ = try_settings(new)
            fixes.append(Fix(f"Offload {ngl} of {model.n_layers} layers to the GPU", runtime.command(model, new),
                             f"-ngl {ngl}: slower decode (CPU layers run at RAM bandwidth); {_peak(alloc)}", 3))
    # 6. vLLM: a higher memory budget, or more GPUs
    if runtime.pools_kv:
        util = s.gpu_memory_utilization or 0.9
        if util < 0.95:
            add("Raise gpu_memory_utilization to 0.95", s.with_(gpu_memory_utilization=0.95), 2)
        for tp in (2, 4, 8):
            if tp > s.tp:
                more = [targets[0]] * tp + [t for t in targets if t.kind == "cpu"]
                alloc = runtime.allocate(model, plan.weights, s.with_(tp=tp), more)
                if _fits(alloc):
                    fixes.append(Fix(f"Use {tp} GPUs with tensor parallelism", runtime.command(model, s.with_(tp=tp)),
                                     f"{alloc.kv_cache_tokens:,} KV tokens across {tp} × {targets[0].name}", 4))
                    break
    return fixes


__all__ = ["suggest_fixes", "replace"]
