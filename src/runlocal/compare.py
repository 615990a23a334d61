"""Devices side by side: capacity, bandwidth, price, and for a model the verdict, the largest
context that fits and the predicted speed."""

from __future__ import annotations

from typing import Any

from .errors import InputError


def compare_devices(names: list[str], *, model: str | None = None, ctx: int | None = None,
                    runtime: str = "llama.cpp", quant: str | None = None) -> list[dict[str, Any]]:
    from .hardware.catalog import find_device

    if len(names) > 16:
        raise InputError("devices: compare at most 16 devices at once")
    rows = []
    spec = None
    if model:
        from .model.resolve import resolve_model

        spec = resolve_model(model)
    for name in names:
        dev = find_device(name.strip())
        row: dict[str, Any] = {"id": dev.id, "name": dev.name, "memory_bytes": dev.memory_bytes,
                               "bandwidth_gbs": dev.bandwidth_gbs, "fp16_tflops": dev.fp16_tflops,
                               "launch_price_usd": dev.launch_price_usd, "tdp_w": dev.tdp_w}
        if spec is not None:
            from .plan import make_plan
            from .runtimes import Settings
            from .hardware.targets import targets_from_options

            targets, _ = targets_from_options(dev.id, None, None)
            plan = make_plan(spec, Settings(runtime=runtime, ctx=ctx, quant=quant), targets, with_fixes=False)
            row |= {"verdict": plan.verdict, "max_context": plan.max_context, **plan.speed}
        rows.append(row)
    return rows
