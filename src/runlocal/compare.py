"""Devices side by side: capacity, bandwidth, price, the largest catalog model that fits, and for a model the
verdict, the weight format that fits, the largest context and the predicted speed.

Each name is a `--gpu` spec: a catalog name ("4090", "m3 max 64gb", "ddr5-6400 12ch") or several of one card
("2x3090"). Used by `runlocal compare` and /api/v1/compare (same rows)."""

from __future__ import annotations

from typing import Any

from .errors import InputError

MAX_COMPARE = 16


def _largest_catalog_model(capacity: int, ctx: int, runtime: str) -> dict[str, Any] | None:
    from .sweep import largest_model_that_fits

    try:
        top = largest_model_that_fits(capacity, ctx, runtime)
    except Exception:  # a runtime the sweep cannot plan: leave the column empty rather than fail the table
        return None
    if top is None:
        return None
    return {"alias": top["alias"], "quant": top["quant"], "ctx": ctx, "weights_bytes": top["weights_bytes"],
            "runtime": runtime}


def _used_price(dev) -> dict[str, Any]:
    """The catalog's used-market price for a device and its source (a dated page), or nothing."""
    from .choose import device_records
    from .hardware.catalog import load_sources

    raw = device_records().get(dev.id, {})
    if not raw.get("used_price_usd"):
        return {"used_price_usd": None, "used_price_source": None, "used_price_as_of": None}
    src = raw.get("used_price_source")
    return {"used_price_usd": raw["used_price_usd"], "used_price_source": load_sources().get(str(src), src),
            "used_price_as_of": raw.get("used_price_as_of")}


def compare_devices(names: list[str], *, model: str | None = None, ctx: int | None = None,
                    runtime: str = "llama.cpp", quant: str | None = None, used: bool = False,
                    policy=None, best_quant_each: bool = False) -> list[dict[str, Any]]:
    from .choose import DEFAULT_CTX, best_fit, device_price, quant_ladder, runtime_label, spec_string
    from .hardware.catalog import parse_device_spec
    from .hardware.targets import targets_from_options
    from .runtimes import get_runtime

    names = [n.strip() for n in names if n and n.strip()]
    if not names:
        raise InputError("devices: name at least one device")
    if len(names) > MAX_COMPARE:
        raise InputError(f"devices: compare at most {MAX_COMPARE} devices at once")
    if ctx is not None and ctx <= 0:
        raise InputError(f"ctx: must be a positive number of tokens, got {ctx}")
    planner = get_runtime(runtime)      # 'vllm==0.19.0': that release's rules in every plan (runtimes/versions.py)
    rt = planner.name
    label, rules = runtime_label(planner)
    sweep_ctx = ctx or DEFAULT_CTX
    spec = None
    if model:
        from .model.resolve import resolve_model

        spec = resolve_model(model, policy)     # policy: what a server may read (model/policy.py)
    rows = []
    for name in names:
        devs = parse_device_spec(name)
        dev, count = devs[0], len(devs)
        mixed = any(d.id != dev.id for d in devs)
        targets, named = targets_from_options(name, None, None)
        gpu_side = [t for t in targets if t.kind != "cpu"] or targets
        capacity = sum(t.capacity for t in gpu_side)
        price = device_price(dev, used=used) if not mixed else None
        total_price = (sum(device_price(d, used=used).usd or 0 for d in devs)
                       if mixed and all(device_price(d, used=used).usd for d in devs)
                       else (price.usd * count if price and price.usd is not None else None))
        row: dict[str, Any] = {
            "spec": name if mixed else spec_string(dev.id, count), "id": dev.id, "name": dev.name, "count": count,
            "kind": dev.kind, "memory_bytes": sum(d.memory_bytes for d in devs), "usable_bytes": capacity,
            "bandwidth_gbs": dev.bandwidth_gbs, "fp16_tflops": dev.fp16_tflops, "tdp_w": dev.tdp_w,
            "launch_price_usd": dev.launch_price_usd, "launch_year": getattr(dev, "launch_year", None),
            **_used_price(dev), "price_usd": total_price,
            "price_kind": price.kind if price else None, "price_source": price.source if price else None,
            "price_as_of": price.as_of if price else None,
            "largest_model": _largest_catalog_model(capacity, sweep_ctx, "llama.cpp"),   # the sweep's GGUF ladder
        }
        row["variant_notes"] = [n for n in named if "is taken as" in n]    # "m3 max" → the 36 GB one, said
        if len(gpu_side) > 1:
            row["largest_model_note"] = "the sweep adds the devices' capacities (a layer split over them)"
        if spec is not None:
            from .plan import make_plan
            from .runtimes import Settings

            ladder = quant_ladder(rt, quant, spec)
            fit = best_fit(spec, targets, runtime=runtime, ctx=sweep_ctx, quants=ladder)
            q = fit.settings.quant if fit else ladder[-1]        # none fits: show the smallest format's plan
            n_gpus = sum(1 for t in targets if t.kind != "cpu")
            tp = n_gpus if (n_gpus > 1 and get_runtime(rt).pools_kv) else 1
            plan = make_plan(spec, Settings(runtime=rt, ctx=sweep_ctx, quant=q, tp=tp), targets, with_fixes=False,
                             with_concurrency=False, runtime=get_runtime(runtime))       # the rows do not show it
            row |= {"runtime": label, "runtime_rules": rules,
                    "quant": plan.weights.quant, "verdict": plan.verdict, "runs_whole": fit is not None,
                    "max_context": plan.max_context, **plan.speed, "command": plan.command}
            if fit is not None and row["price_usd"] and row.get("decode_tokens_per_s"):
                row["tokens_per_s_per_1000_usd"] = round(row["decode_tokens_per_s"] / row["price_usd"] * 1000, 3)
        rows.append(row)
    if spec is not None and not quant and not best_quant_each:
        _same_quant(rows, spec, runtime, sweep_ctx, quant_ladder(rt, None, spec))
    return rows


def _same_quant(rows: list[dict[str, Any]], spec, rt: str, ctx: int, ladder) -> None:
    """One quant for every device, so the rows compare hardware and not formats: the best that fits them all
    (the smallest of each device's best); each row keeps its own best as ``best_quant``."""
    from .choose import download_quant
    from .hardware.targets import targets_from_options
    from .plan import make_plan
    from .runtimes import Settings, get_runtime

    order = {str(q).upper(): i for i, q in enumerate(ladder)}
    whole = [r for r in rows if r.get("runs_whole")]
    if not whole:
        return

    def plan_at(r, q):
        targets, _ = targets_from_options(r["spec"], None, None)
        n_gpus = sum(1 for t in targets if t.kind != "cpu")
        tp = n_gpus if (n_gpus > 1 and get_runtime(rt).pools_kv) else 1
        return make_plan(spec, Settings(runtime=get_runtime(rt).name, ctx=ctx, quant=q, tp=tp), targets,
                         with_fixes=False, with_concurrency=False, runtime=get_runtime(rt))

    # the file people download for the runtime, as `check` and `best` plan it, when every device holds it
    download = download_quant(spec, rt)
    planned = {}
    if download is not None:
        planned = {r["spec"]: plan_at(r, download) for r in rows}
        if any(planned[r["spec"]].verdict == "does_not_fit" for r in whole):
            planned = {}
    if planned:
        common = download
    elif len({r["quant"] for r in rows}) < 2:
        return
    else:
        common = max((r["quant"] for r in whole), key=lambda q: order.get(str(q).upper(), -1))
    for r in rows:
        r["best_quant"] = r["quant"]
        if r["quant"] == common and not planned:
            continue
        plan = planned.get(r["spec"]) or plan_at(r, common)
        r |= {"quant": plan.weights.quant, "verdict": plan.verdict, "max_context": plan.max_context, **plan.speed,
              "command": plan.command}
        if r.get("price_usd") and r.get("decode_tokens_per_s") and plan.verdict != "does_not_fit":
            r["tokens_per_s_per_1000_usd"] = round(r["decode_tokens_per_s"] / r["price_usd"] * 1000, 3)
