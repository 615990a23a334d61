"""Stored measurements (from `runlocal probe` or verified benchmarks) take over from predictions.

A record matches a plan when it was taken with the same runtime and model (the plan's id or repo
id), on the plan's device (names compared through the hardware catalog, so "NVIDIA GeForce RTX
4090" from NVML matches `--gpu 4090`), and with the same weight quant when the record names one.
Only records that are ``verified`` count (an anonymous submission to a server does not, until an
admin verifies it), and only plausible ones (:func:`implausibility`): no more decode speed than the
device's memory bandwidth allows, no context beyond the model's trained one.
What is used: the median measured decode/prefill speed replaces the speed model's, and the median
context or concurrency that ran is a floor for the predicted ceilings (a median, so one outlier
cannot move an answer). The plan says so in `measured`, `speed.source` and an explain step.

Decode slows as the KV cache fills, and the prediction is for a cache at half the context
(``speed.decode_at_context``). A record that states the cache depth its decode ran at (``settings.decode_at_context``,
or llama-bench's ``n_depth``, its -d) counts for decode only at that depth: within DEPTH_MATCH of the plan's (a
matching rule, not a fitted figure). A record that states none still counts, but the plan then says the depth is
unknown (``decode_at_context`` None, ``measured.decode_context_stated`` false) rather than the prediction's depth.

This module is core: it imports neither the API nor SQLAlchemy. The CLI's local store is read here
with the standard library's sqlite3, read-only, and only when its file exists.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .plan import Plan
from .runtimes import Step

# Decode is memory-bound: every generated token reads each active weight once, so one stream cannot
# decode faster than bandwidth / bytes of active weights (the roofline of memory-bound decode;
# hardware/speed.py, whose fitted share of it is 0.54-0.92). The margin of 2× leaves room for datasheet
# bandwidths below what a card reaches, caches holding part of a small model, and rounding; a claim
# above it is not a measurement of plain decode (speculative decoding included: not what is predicted).
DECODE_MARGIN = 2.0
# With no quant named, the fewest bytes a weight can take: llama.cpp's IQ1_S, 50 bytes per block of 256
# weights = 1.5625 bits (ggml/src/ggml-common.h, block_iq1_s).
MIN_BITS_PER_WEIGHT = 1.5625
# a record's stated decode depth counts at a plan's when they differ by at most this share of the plan's
DEPTH_MATCH = 0.25
RECORD_FIELDS = ("id", "device", "runtime", "model", "quant", "decode_tokens_per_s", "prefill_tokens_per_s",
                 "peak_memory_bytes", "max_context", "max_concurrency", "measured_at", "created_at", "verified")


def device_key(name: str) -> str:
    from .hardware.catalog import UnknownDeviceError, find_device, normalize_name

    if normalize_name(name) in ("cpu", "cpuram", "ram", "host"):   # probe's "CPU", the plan's "CPU RAM"
        return "cpu"
    try:
        return find_device(name).id
    except (UnknownDeviceError, ValueError):
        return normalize_name(name)


def device_bandwidth_gbs(name: str) -> float | None:
    """The catalog's memory bandwidth of a device name, None when the catalog does not know it."""
    from .hardware.catalog import UnknownDeviceError, find_device

    try:
        return find_device(name).bandwidth_gbs or None
    except (UnknownDeviceError, ValueError):
        return None


def fastest_cpu_memory() -> tuple[str, float]:
    """(id, GB/s) of the fastest CPU memory in the hardware catalog: the ceiling's bandwidth for a record taken on
    "CPU" whose memory nobody named (12-channel DDR5-6400, 614.4 GB/s, today). A named or assumed plan memory is a
    guess about the machine, the catalog's fastest is a bound on any machine: a CPU record above it is no CPU's."""
    from .hardware.catalog import load_devices

    best = max((d for d in load_devices() if d.kind == "cpu"), key=lambda d: d.bandwidth_gbs)
    return best.id, best.bandwidth_gbs


def record_bandwidth_gbs(device: str, named_cpu_gbs: float | None = None) -> tuple[float | None, str]:
    """(the bandwidth a record's decode is bounded by, where it comes from): the catalog device's; for "CPU", the
    memory the plan names (--gpu cpu-ddr4-3200-2ch), else the catalog's fastest CPU memory."""
    if device_key(device) == "cpu":
        if named_cpu_gbs:
            return named_cpu_gbs, f"the plan's named RAM, {named_cpu_gbs:g} GB/s"
        cpu_id, gbs = fastest_cpu_memory()
        return gbs, f"the fastest CPU memory in the catalog ({cpu_id}, {gbs:g} GB/s)"
    bw = device_bandwidth_gbs(device)
    return bw, (f"{device}'s {bw:g} GB/s" if bw else "unknown")


def decode_ceiling(bandwidth_gbs: float | None, bytes_per_token: float | None) -> float | None:
    """The most decode tokens/s a device can plausibly show: DECODE_MARGIN × bandwidth / bytes read a token."""
    if not bandwidth_gbs or not bytes_per_token or bytes_per_token <= 0:
        return None
    return DECODE_MARGIN * bandwidth_gbs * 1e9 / bytes_per_token


def implausibility(record: dict[str, Any], *, ceiling: float | None, trained_context: int | None,
                   bandwidth_from: str = "bandwidth") -> tuple[str, str] | None:
    """(field, why) for a figure the device or model cannot produce; None when the record is plausible."""
    decode = record.get("decode_tokens_per_s")
    if ceiling is not None and isinstance(decode, (int, float)) and decode > ceiling:
        why = (f"{decode:g} tokens/s is above what this device's memory bandwidth allows for this model "
               f"(at most {ceiling:,.0f}: {DECODE_MARGIN:g} × {bandwidth_from} / bytes of active weights)")
        return "decode_tokens_per_s", why
    ctx = record.get("max_context")
    if trained_context and isinstance(ctx, int) and ctx > trained_context:
        return ("max_context", f"{ctx:,} tokens is above the model's trained context ({trained_context:,})")
    return None


def _norm(text: str | None) -> str:
    return (text or "").strip().lower().replace("_", "-")


def _model_names(plan: Plan) -> set[str]:
    return {_norm(x) for x in (plan.model.id, plan.model.repo_id, plan.model.source) if x}


def _plan_ceiling(plan: Plan, record: dict[str, Any]) -> float | None:
    """decode_ceiling for the plan's weights on the record's device, times the plan's devices of that kind."""
    from .hardware.token_work import read_fraction

    key = device_key(record.get("device") or "")
    count = sum(1 for d in plan.allocation.devices if d.kind != "cpu" and device_key(d.name) == key) or 1
    named = next((t.bandwidth_gbs for t in plan.searched_on if t.kind == "cpu" and t.bandwidth_gbs), None)
    bw, _ = record_bandwidth_gbs(record.get("device") or "", named)
    return decode_ceiling(bw * count if bw else None, plan.weights.total * read_fraction(plan.model))


def stored_record_problem(record: dict[str, Any]) -> tuple[str, str] | None:
    """(field, why) for a record about to be stored (runlocal probe, POST /api/v1/benchmarks) whose figures its device
    and model cannot produce: decode above DECODE_MARGIN × the device's bandwidth (record_bandwidth_gbs) / the bytes
    a token reads, a context beyond the trained one. Catalog models only: nothing is fetched to size another; with
    no quant (or one this version cannot size), the smallest weights (MIN_BITS_PER_WEIGHT), so the bound is loosest."""
    from .errors import RunlocalError
    from .hardware.token_work import read_fraction
    from .model import catalog
    from .plan import estimate

    name = str(record.get("model") or "")
    if not name or catalog.find_entry(name) is None:
        return None
    model = catalog.lookup(name)
    quant = record.get("quant")
    if quant:       # the contract's own refusal, in check's words (runlocal check --quant Q9_Z)
        from .runtimes.quant_support import refuse_unloadable
        from .runtimes.versions import split_runtime

        try:
            refuse_unloadable(model, str(quant), split_runtime(str(record.get("runtime") or "llama.cpp"))[0])
        except RunlocalError as e:
            return "quant", str(e).removeprefix("quant: ")
    try:
        weights = estimate(model, quant).total if quant else model.params * MIN_BITS_PER_WEIGHT / 8
    except (RunlocalError, ValueError, KeyError):
        weights = model.params * MIN_BITS_PER_WEIGHT / 8
    bw, source = record_bandwidth_gbs(str(record.get("device") or ""))
    return implausibility(record, ceiling=decode_ceiling(bw, weights * read_fraction(model)),
                          trained_context=model.max_position_embeddings, bandwidth_from=source)


def matching(plan: Plan, records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The verified, plausible records taken with this plan's runtime, model, quant and device."""
    models = _model_names(plan)
    gpus = [d for d in plan.allocation.devices if d.kind != "cpu"]
    devices = {device_key(d.name) for d in (gpus or plan.allocation.devices)}
    if not gpus:
        devices.add("cpu")
    quant = _norm(plan.weights.quant)
    out = []
    for r in records:
        if r.get("verified") is not True:
            continue
        if _norm(r.get("runtime")) != _norm(plan.runtime) or _norm(r.get("model")) not in models:
            continue
        if r.get("quant") and _norm(r["quant"]) != quant:
            continue
        if device_key(r.get("device") or "") not in devices:
            continue
        if implausibility(r, ceiling=_plan_ceiling(plan, r), trained_context=plan.model.max_position_embeddings):
            continue
        out.append(r)
    return out


def _median(values: Iterable[Any]) -> float | None:
    vals = [v for v in values if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
    return statistics.median(vals) if vals else None


def _median_int(values: Iterable[Any]) -> int | None:
    m = _median(values)
    return int(m) if m else None


def decode_depth(record: dict[str, Any]) -> int | None:
    """The KV-cache depth a record's decode ran at, where it states one (module docstring); None where not."""
    given = record.get("settings")
    settings: dict[str, Any] = given if isinstance(given, dict) else {}
    for key in ("decode_at_context", "n_depth"):
        v = settings.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
            return int(v)
    return None


def _decode_records(plan: Plan, recs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int | None, bool]:
    """(the records whose decode counts at the plan's depth, their median stated depth, whether every one states
    it): a stated depth counts within DEPTH_MATCH of the plan's; an unstated one counts, said unknown."""
    at = plan.speed.get("decode_at_context")
    used: list[dict[str, Any]] = []
    depths: list[int] = []
    for r in recs:
        depth = decode_depth(r)
        if depth is None:
            used.append(r)
        elif isinstance(at, int) and abs(depth - at) <= DEPTH_MATCH * max(at, 1):
            used.append(r)
            depths.append(depth)
    stated = bool(used) and len(depths) == len(used)
    return used, (int(statistics.median(depths)) if stated else None), stated


def apply_measurements(plan: Plan, records: Iterable[dict[str, Any]]) -> Plan:
    """The plan with the matching records' figures (medians) in place of the predicted ones."""
    recs = matching(plan, records)
    if not recs:
        return plan
    decode_recs, depth, depth_stated = _decode_records(plan, recs)
    decode = _median(r.get("decode_tokens_per_s") for r in decode_recs)
    prefill = _median(r.get("prefill_tokens_per_s") for r in recs)
    ctx_ok = _median_int(r.get("max_context") for r in recs)
    conc_ok = _median_int(r.get("max_concurrency") for r in recs)
    when = max((r.get("measured_at") or r.get("created_at") or "" for r in recs), default="") or None
    measured: dict[str, Any] = {"records": len(recs), "ids": [r.get("id") for r in recs], "device": recs[0].get("device"),
                "decode_tokens_per_s": decode, "prefill_tokens_per_s": prefill,
                "max_context_ok": ctx_ok, "max_concurrency_ok": conc_ok,
                "peak_memory_bytes": _median_int(r.get("peak_memory_bytes") for r in recs),
                "decode_records": len(decode_recs) if decode else 0,
                "decode_at_context": depth if decode else None, "decode_context_stated": depth_stated if decode else None,
                "latest": when, "predicted": {"speed": dict(plan.speed), "max_context": plan.max_context,
                                              "max_concurrency": plan.max_concurrency}}
    speed: dict[str, Any] = dict(plan.speed)
    if decode:
        speed["decode_tokens_per_s"] = round(decode, 1)
        speed["decode_at_context"] = depth       # the depth it was measured at; None: the records do not say
    if prefill:
        speed["prefill_tokens_per_s"] = round(prefill, 1)
        # a stored run's prefill was measured at its own prompt, not this one's: no time to first token is derived from it
        speed["time_to_first_token_s"] = None
        speed["prefill_prompt_tokens"] = None
    # "mixed": a measured prefill beside a predicted decode (no record counts at this plan's decode depth)
    speed["source"] = "measured" if decode else "mixed" if prefill else speed.get("source", "predicted")
    max_ctx = max(plan.max_context or 0, ctx_ok or 0) or None
    max_conc = max(plan.max_concurrency or 0, float(conc_ok or 0)) or None
    step = Step("measured on this device",
                f"median of {len(recs)} verified run(s) (ids {', '.join(str(i) for i in measured['ids'][:5])}; "
                f"latest {when or 'unknown'}; on {measured['device']}): decode {_rate(decode)} tokens/s "
                f"{_depth_words(decode, depth, plan)}, prefill {_rate(prefill)} tokens/s, ran at ctx "
                f"{f'{ctx_ok:,}' if ctx_ok else '—'} × {conc_ok or '—'} requests",
                "used in place of the speed model; the ceilings are at least what ran",
                "benchmark store (runlocal probe / verified /api/v1/benchmarks)")
    basis = plan.max_context_basis if max_ctx == plan.max_context else "measured"
    return replace(plan, speed=speed, max_context=max_ctx, max_concurrency=max_conc, max_context_basis=basis,
                   steps=plan.steps + (step,), measured=measured)


def _rate(value: float | None) -> str:
    return f"{value:,.1f}" if value else "—"


def _depth_words(decode: float | None, depth: int | None, plan: Plan) -> str:
    at = plan.speed.get("decode_at_context")
    if not decode:
        return (f"(none measured at {at:,} tokens in the KV cache)" if isinstance(at, int) else "").strip()
    if depth is not None:
        return f"at {depth:,} tokens in the KV cache"
    return ("at a KV-cache depth the records do not state" +
            (f" (the prediction's is {at:,} tokens)" if isinstance(at, int) else ""))


# --- the CLI's local store -------------------------------------------------------------------------

def local_store_path() -> Path | None:
    """The SQLite file `runlocal probe` writes (RUNLOCAL_DB_URL when it names a SQLite file); None when the
    configured store is a server database (PostgreSQL …), which the CLI does not read."""
    from . import config

    url = config.store_url()
    if not url:
        return config.data_dir() / "benchmarks.sqlite3"
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///"):].split("?", 1)[0])
    return None


def local_records(plan: Plan, limit: int = 200) -> list[dict[str, Any]]:
    """Verified records for this plan's model from the local store, read-only with sqlite3; nothing when
    the file does not exist (checking never creates it) or is not a store this version can read."""
    path = local_store_path()
    if path is None or not path.is_file():
        return []
    import sqlite3  # only when there is a file to read

    names = sorted(_model_names(plan))
    sql = (f"SELECT {', '.join(RECORD_FIELDS)} FROM benchmarks WHERE verified = 1 AND "
           f"lower(replace(trim(model), '_', '-')) IN ({', '.join('?' * len(names))}) ORDER BY id DESC LIMIT ?")
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return []
    try:
        rows = conn.execute(sql, (*names, limit)).fetchall()
    except sqlite3.Error:          # an older store (no `verified` column: nothing in it was verified) or not a store
        return []
    finally:
        conn.close()
    return [_local_row(dict(zip(RECORD_FIELDS, r))) for r in rows]


def _local_row(d: dict[str, Any]) -> dict[str, Any]:
    for k in ("decode_tokens_per_s", "prefill_tokens_per_s", "peak_memory_bytes", "max_context", "max_concurrency"):
        v = d[k]
        d[k] = v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None
    for k in ("max_context", "max_concurrency", "peak_memory_bytes"):
        d[k] = int(d[k]) if d[k] is not None else None
    d["verified"] = d["verified"] == 1
    return d


def store_records(store, plan: Plan, limit: int = 200) -> list[dict[str, Any]]:
    """Verified records for this plan's model from a store object (the server's BenchmarkStore)."""
    out: list[dict[str, Any]] = []
    for name in {x for x in (plan.model.id, plan.model.repo_id, plan.model.source) if x}:
        out += store.list(model=name, verified=True, limit=limit)
    return out
