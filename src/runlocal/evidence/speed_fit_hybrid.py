"""Hybrid (recurrent) models' llama-bench rows scored against the speed model (issue #18), and the one constant of
the recurrent-layer terms fitted on them (hardware/recurrent_speed.py KERNEL_SCALE).

Tuning: ``measurements/speed/hybrid_2026.jsonl`` and ``measurements/speed/held_out/hybrid.jsonl`` — round 1's two parts
(rule held_out/hybrid_queries.md) — and the lent H100's own granite-4.0-h-tiny decode runs (h100_llamacpp_own.jsonl,
``fit_scope: "recurrent"`` since session 15: a hybrid's record fits the recurrent terms, not the class constants).
Round 1's held-out part was scored once when the state term was committed (held_out/hybrid_first_run.txt, session 14);
session 15 uses it for tuning, where it stays (its records keep ``holdout: true``, as scored then). Held out:
``measurements/speed/held_out/hybrid2.jsonl`` (round 2, rule held_out/hybrid2_queries.md, committed before any of it
was scored), never fitted; its first scoring is kept in held_out/hybrid2_first_run.txt. Every hybrid record carries
``fit_scope: "recurrent"``: speed_fit.load_records leaves those in measurements/speed/*.jsonl out of every other fit and
load_held_out skips ``hybrid*`` files. Each part is printed on its own: every record, then |error| per backend, per
recurrent kind and graph path (``recurrent`` / ``gdn_path``) and per source.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

from ..hardware import recurrent_speed as RS
from .speed_fit import DATA, HELD_OUT, build_rows, fit_for, predict_row, record_model
from .speed_fit_era import era_consts
from .speed_report import backend_errors, group_errors, print_group_table

TUNING_FILES = (DATA / "hybrid_2026.jsonl", HELD_OUT / "hybrid.jsonl")
HELD_OUT_FILE = HELD_OUT / "hybrid2.jsonl"


def _read(path) -> list[dict]:
    if not path.exists():
        return []
    name = path.relative_to(DATA).as_posix()
    recs = [{**json.loads(line), "_file": name} for line in path.read_text().splitlines() if line.strip()]
    return [r for r in recs if not r.get("outlier")]


def load_hybrid(held_out: bool) -> list[dict]:
    """The tuning records (``held_out`` False: both round 1 files and the ``fit_scope: "recurrent"`` records of the other
    measurements/speed/*.jsonl, the lent H100's own granite-4.0-h-tiny runs) or round 2's held-out ones, outliers left
    out."""
    if held_out:
        return _read(HELD_OUT_FILE)
    own = [r for p in sorted(DATA.glob("*.jsonl")) if p not in TUNING_FILES
           for r in _read(p) if r.get("fit_scope") == "recurrent"]
    return [r for p in TUNING_FILES for r in _read(p)] + own


def fit_kernel_scale(consts, split_ms: float) -> float:
    """KERNEL_SCALE: over the tuning decode rows, the median of (measured − predicted seconds per token, the prediction
    without the extra kernels) ÷ (their seconds at scale 1: extra_layers at scale 1 × the row's Fit.layer_us); 0 if that
    median is negative."""
    ratios = []
    for row in build_rows(load_hybrid(held_out=False)):
        model = record_model(row.rec["model"])
        if row.kind != "tg" or not RS.extra_kernels(model):
            continue
        unit = RS.extra_layers(model, row.rec.get("gdn_path", RS.PLANNED_GDN_PATH), scale=1.0) / row.n_devices
        base = predict_row(replace(row, extra_layers=0.0), consts, split_ms)
        layer_us = fit_for(row, era_consts(row, consts)).layer_us
        if base and unit and layer_us:
            ratios.append((1.0 / row.measured - 1.0 / base) / (unit * layer_us / 1e6))
    return round(max(0.0, statistics.median(ratios)), 2) if ratios else 0.0


def _path(row) -> str:
    """The recurrent op a record's model runs and, for a gated delta net, the graph its build plans."""
    kind = row.rec.get("recurrent", "?")
    return f"{kind}/{row.rec['gdn_path']}" if row.rec.get("gdn_path") else kind


PARTS = ((False, "tuning part, measurements/speed/hybrid_2026.jsonl + held_out/hybrid.jsonl (round 1) + the H100's "
          "own granite runs", "held_out/hybrid_queries.md"),
         (True, "held-out part, measurements/speed/held_out/hybrid2.jsonl, never fitted", "held_out/hybrid2_queries.md"))


def report_hybrid(consts, split_ms: float, *, quiet: bool) -> None:
    print(f"\nRecurrent-layer terms (hardware/recurrent_speed.py): KERNEL_SCALE = {RS.KERNEL_SCALE:g} (refit on the "
          f"tuning part: {fit_kernel_scale(consts, split_ms):g}); scan per op: "
          + ", ".join(f"{t[0]} {RS.scan_rate(k, t[2]) * 1e12:.3f} ps/element/token on an {t[1]}"
                      for k, t in RS.SCAN_TIMINGS.items())
          + f", across cards {RS.SCAN_LATENCY_US:.1f} µs + {RS.SCAN_BW_US_GBS:,.0f} µs·GB/s ÷ bandwidth")
    for held, title, rule in PARTS:
        rows = build_rows(load_hybrid(held))
        if not rows:
            continue
        print(f"\nHybrid (recurrent) models, {title} ({len(rows)} records, rule: {rule}):")
        backend_errors(rows, consts, split_ms, quiet=quiet, label="  ")
        label = "held out" if held else "tuning"
        print_group_table(f"  hybrid {label}, per backend", "backend",
                          group_errors(rows, consts, split_ms, lambda r: r.backend))
        print_group_table(f"  hybrid {label}, per recurrent op / graph path", "op/path",
                          group_errors(rows, consts, split_ms, _path))
        print_group_table(f"  hybrid {label}, per source", "source",
                          group_errors(rows, consts, split_ms, lambda r: "/".join(r.rec["source_url"].split("/")[3:7])))
