"""Stored measurements (from `runlocal probe` or submitted benchmarks) take over from predictions.

A record matches a plan when it was taken with the same runtime and model (the plan's id or repo
id), on the plan's device (names compared through the hardware catalog, so "NVIDIA GeForce RTX
4090" from NVML matches `--gpu 4090`), and with the same weight quant when the record names one.
What is used: the measured decode/prefill speed replaces the speed model's, and a context or
concurrency that ran is a floor for the predicted ceilings. The plan says so in `measured`,
`speed.source` and an explain step.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any, Iterable

from .plan import Plan
from .runtimes import Step


def device_key(name: str) -> str:
    from .hardware.catalog import UnknownDeviceError, find_device, normalize_name

    if normalize_name(name) in ("cpu", "cpuram", "ram", "host"):   # probe's "CPU", the plan's "CPU RAM"
        return "cpu"
    try:
        return find_device(name).id
    except (UnknownDeviceError, ValueError):
        return normalize_name(name)


def _norm(text: str | None) -> str:
    return (text or "").strip().lower().replace("_", "-")


def matching(plan: Plan, records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    models = {_norm(x) for x in (plan.model.id, plan.model.repo_id, plan.model.source) if x}
    gpus = [d for d in plan.allocation.devices if d.kind != "cpu"]
    devices = {device_key(d.name) for d in (gpus or plan.allocation.devices)}
    if not gpus:
        devices.add("cpu")
    quant = _norm(plan.weights.quant)
    out = []
    for r in records:
        if _norm(r.get("runtime")) != _norm(plan.runtime) or _norm(r.get("model")) not in models:
            continue
        if r.get("quant") and _norm(r["quant"]) != quant:
            continue
        if device_key(r.get("device") or "") in devices:
            out.append(r)
    return out


def _median(values: list[float | int | None]) -> float | None:
    vals = [v for v in values if v]
    return statistics.median(vals) if vals else None


def apply_measurements(plan: Plan, records: Iterable[dict[str, Any]]) -> Plan:
    """The plan with the matching records' figures in place of the predicted ones."""
    recs = matching(plan, records)
    if not recs:
        return plan
    decode = _median([r.get("decode_tokens_per_s") for r in recs])
    prefill = _median([r.get("prefill_tokens_per_s") for r in recs])
    ctx_ok = max((r.get("max_context") or 0 for r in recs), default=0) or None
    conc_ok = max((r.get("max_concurrency") or 0 for r in recs), default=0) or None
    when = max((r.get("measured_at") or r.get("created_at") or "" for r in recs), default="") or None
    measured = {"records": len(recs), "ids": [r.get("id") for r in recs], "device": recs[0].get("device"),
                "decode_tokens_per_s": decode, "prefill_tokens_per_s": prefill,
                "max_context_ok": ctx_ok, "max_concurrency_ok": conc_ok,
                "peak_memory_bytes": max((r.get("peak_memory_bytes") or 0 for r in recs), default=0) or None,
                "latest": when, "predicted": {"speed": dict(plan.speed), "max_context": plan.max_context,
                                              "max_concurrency": plan.max_concurrency}}
    speed = dict(plan.speed)
    if decode:
        speed["decode_tokens_per_s"] = round(decode, 1)
    if prefill:
        speed["prefill_tokens_per_s"] = round(prefill, 1)
    speed["source"] = "measured" if (decode or prefill) else speed.get("source", "model")
    max_ctx = max(plan.max_context or 0, ctx_ok or 0) or None
    max_conc = max(plan.max_concurrency or 0, float(conc_ok or 0)) or None
    step = Step("measured on this device",
                f"median of {len(recs)} stored run(s) (ids {', '.join(str(i) for i in measured['ids'][:5])}; "
                f"latest {when or 'unknown'}): decode {decode or '—'} tokens/s, prefill {prefill or '—'} tokens/s, "
                f"ran at ctx {ctx_ok or '—'} × {conc_ok or '—'} requests",
                "used in place of the speed model; the ceilings are at least what ran",
                "benchmark store (runlocal probe / /api/v1/benchmarks)")
    return replace(plan, speed=speed, max_context=max_ctx, max_concurrency=max_conc,
                   steps=plan.steps + (step,), measured=measured)


def local_records(plan: Plan, limit: int = 200) -> list[dict[str, Any]]:
    """Records for this plan's model from the configured store; nothing (and no SQLAlchemy import)
    when no store was ever written."""
    from . import config

    url = config.store_url()
    if not url and not (config.data_dir() / "benchmarks.sqlite3").exists():
        return []
    from .api.store import BenchmarkStore

    store = BenchmarkStore(url)
    return store_records(store, plan, limit)


def store_records(store, plan: Plan, limit: int = 200) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in {x for x in (plan.model.id, plan.model.repo_id, plan.model.source) if x}:
        out += store.list(model=name, limit=limit)
    return out
