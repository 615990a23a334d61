"""llama.cpp CPU-only decode rows priced by runlocal's CPU constants (hardware/speed.py ``CPU``), and the rule's grid fit.

The records and the rule they were collected by: measurements/speed/cpu_decode_queries.md; benchmarks/cpu_decode_accuracy.py
prints the comparison. Each row is priced as one CPU part, exactly as ``speed.decode_seconds`` prices it.
"""

from __future__ import annotations

import json
import math
import statistics

from runlocal.hardware import speed as S
from runlocal.hardware import token_work as TW
from runlocal.kv import kv_bytes
from runlocal.plan import estimate

from . import MEASUREMENTS
from .speed_fit import parse_test, record_model

DATA = MEASUREMENTS / "speed" / "cpu_decode"
EFF_GRID = [round(0.20 + 0.01 * i, 2) for i in range(81)]        # 0.20 … 1.00 (the rule's grid)
LAYER_US_GRID = [float(u) for u in range(301)]                  # 0 … 300 µs


def load(name: str) -> list[dict]:
    path = DATA / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def token_reads(rec: dict) -> tuple[float, float, int]:
    """(weight bytes one token reads, KV bytes at the test's mean depth, layers) for a tgN record."""
    model = record_model(rec["model"])
    kind, n, depth = parse_test(rec["test"])
    if kind != "tg":
        raise ValueError(f"{rec['test']}: only tgN rows are CPU decode records")
    size = rec["model_gib"] * 2**30 if rec.get("model_gib") else float(estimate(model, rec["quant"]).total)
    return size * TW.read_fraction(model, rec["quant"]), float(kv_bytes(model, depth + n // 2)), model.n_layers


def predict(rec: dict, eff: float, layer_us: float) -> float:
    weights, kv, layers = token_reads(rec)
    part = S.Part(weights, kv, rec["ram_gbs"], S.Fit(eff, layer_us, S.CPU.kv_factor), layers)
    return S.decode_speed([part]) or 0.0


def errors(recs: list[dict], eff: float, layer_us: float) -> list[float]:
    """predicted / measured − 1 per record."""
    return [predict(r, eff, layer_us) / r["tokens_per_s"] - 1 for r in recs]


def summary(errs: list[float]) -> tuple[float, float]:
    """(median |error|, p90 |error|) — p90 by nearest rank."""
    a = sorted(abs(e) for e in errs)
    return statistics.median(a), a[min(len(a) - 1, math.ceil(0.9 * len(a)) - 1)]


def log_loss(recs: list[dict], eff: float, layer_us: float) -> float:
    return sum(math.log(predict(r, eff, layer_us) / r["tokens_per_s"]) ** 2 for r in recs)


def profile_loss(recs: list[dict], layer_us: float) -> float:
    """The least loss at this layer_us over eff, eff found to 0.0002 (the grid's 0.01 steps alone leave up to ~0.8 %
    of error, which would read as the layer time mattering)."""
    e0 = min(EFF_GRID, key=lambda e: log_loss(recs, e, layer_us))
    return min(log_loss(recs, e0 + 0.0002 * i, layer_us) for i in range(-50, 51) if e0 + 0.0002 * i > 0)


def fit(recs: list[dict]) -> tuple[float, float, bool]:
    """The rule's grid fit: (eff, layer_us, layer_us_identified). layer_us counts as identified only when the best is
    off the grid's edges and a ±50 % change of it (eff refitted) raises the loss by 1 % or more; otherwise eff alone
    is fitted with layer_us kept at today's value."""
    best = min((log_loss(recs, e, u), e, u) for e in EFF_GRID for u in LAYER_US_GRID[::5])
    _, e0, u0 = best
    # refine layer_us to 1 µs around the coarse best
    best = min((log_loss(recs, e, u), e, u) for e in EFF_GRID for u in LAYER_US_GRID
               if abs(u - u0) <= 5 and abs(e - e0) <= 0.05)
    loss, eff, layer_us = best
    edge = layer_us in (LAYER_US_GRID[0], LAYER_US_GRID[-1])
    # "the data do not separate it": with eff free again, ±50 % of layer_us costs under 1 % more loss (or under
    # 1e-6, ~0.1 % error, where the best loss is ~0)
    moved = min(profile_loss(recs, u) for u in (layer_us * 0.5, layer_us * 1.5))
    flat = moved < loss * 1.01 + 1e-6
    if edge or flat:
        eff = min(EFF_GRID, key=lambda e: log_loss(recs, e, S.CPU.layer_us))
        return eff, S.CPU.layer_us, False
    return eff, layer_us, True


def table(recs: list[dict], label: str, eff: float, layer_us: float) -> list[str]:
    out = [f"{label}: eff {eff:.2f}, {layer_us:.0f} µs a layer"]
    for r, e in zip(recs, errors(recs, eff, layer_us), strict=True):
        out.append(f"  {r['model']:<16} {r['quant']:<7} {r['device']:<20} {r['ram_gbs']:>6.1f} GB/s {r['test']:<6}"
                   f" measured {r['tokens_per_s']:>7.2f}  predicted {predict(r, eff, layer_us):>7.2f}  {e:+.1%}")
    med, p90 = summary(errors(recs, eff, layer_us))
    out.append(f"  median |error| {med:.1%}, p90 {p90:.1%} over {len(recs)} rows")
    return out
