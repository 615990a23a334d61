#!/usr/bin/env python3
"""The H100 MoE micro-batch runs (h100/moe_ubatch_*.jsonl) against runlocal's predictions committed before them
(h100/moe_ubatch_predictions.jsonl: held out, each configuration scored once, on the first run that measured it —
run 3 for pp128/ub128, pp512/ub128, pp512/ub512, pp2048/ub2048; run 4 for pp256/ub256, pp1024/ub1024, pp2048/ub512).

Per model and configuration: the tile factor of the file's real routing (h100/routing_counts_spread.jsonl), the zero
and spread-routing speeds of each run, the prediction and its error against the spread file (the scored figure), and
the rule's own claim isolated: the time per token that spreading the tokens adds (1/spread − 1/zero; the zero file's
routing fills every tile, see README-h100.md) next to the time the rule gives the tiles' padding (1/predicted − the
same formula at tile factor 1).

Usage: PYTHONPATH=src python measurements/speed/h100_moe_compare.py
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
H = HERE / "h100"
RUNS = {"run3": ("moe_ubatch_zero.jsonl", "moe_ubatch_spread.jsonl"),
        "run4": ("moe_ubatch_run4_zero.jsonl", "moe_ubatch_run4_spread.jsonl")}
RUN3_CONFIGS = {(128, 128), (512, 128), (512, 512), (2048, 2048)}
MODELS = ["qwen3-30b-a3b", "gpt-oss-20b", "deepseek-v2-lite", "llama-3.1-8b"]


def _load(name: str) -> dict[tuple[str, int, int], float]:
    """(model, n_batch, n_ubatch) -> tokens/s; a configuration measured twice in one run (the dense control at the
    start and end) keeps the first."""
    out: dict[tuple[str, int, int], float] = {}
    for line in (H / name).read_text().splitlines():
        r = json.loads(line)
        out.setdefault((r["model"], r["n_batch"], r["n_ubatch"]), r["tokens_per_s"])
    return out


def old_method() -> None:
    """pp512/ub512 measured back to back (this run's method, as llama-bench repeats a test) and as run 1 measured it
    (each repetition's prompt after 256 single-token decodes; moe_ubatch_run4_oldmethod.jsonl), same files, run 4."""
    old = [json.loads(line) for line in (H / "moe_ubatch_run4_oldmethod.jsonl").read_text().splitlines()]
    zero, spread = _load(RUNS["run4"][0]), _load(RUNS["run4"][1])
    print("| model | file | pp512 back to back | pp512 after decodes (run 1's method) | difference |")
    print("|---|---|---:|---:|---:|")
    for r in old:
        if r["test"] != "pp512":
            continue
        new = (zero if r["weights_data"] == "zero" else spread).get((r["model"], 512, 512))
        if new:
            print(f"| {r['model']} | {r['weights_data']} | {new:,.0f} | {r['tokens_per_s']:,.0f} | "
                  f"{r['tokens_per_s'] / new - 1:+.1%} |")


def main() -> int:
    sys.path.insert(0, str(HERE))
    from moe_predictions import rule_prefill  # type: ignore[import-not-found]
    preds = {(r["model"], r["n_batch"], r["n_ubatch"]): r
             for r in map(json.loads, (H / "moe_ubatch_predictions.jsonl").read_text().splitlines())}
    tiles = {(r["file"].split(".")[0], r["prompt"], r["ubatch"]): r["tile_factor_real_mean"]
             for r in map(json.loads, (H / "routing_counts_spread.jsonl").read_text().splitlines())}
    meas = {run: (_load(z), _load(s)) for run, (z, s) in RUNS.items()}
    print("| model | prompt / ubatch | tile factor (real routing) | zero t/s run 3 / 4 | spread t/s run 3 / 4 | "
          "spread / zero | predicted | error (held out) | added µs/token measured | predicted | formula at factor 1 "
          "vs zero | zero + predicted padding vs spread |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    errs: dict[str, list[float]] = {}
    for m in MODELS:
        for (model, p, u), pr in sorted(preds.items(), key=lambda kv: (kv[0][2], kv[0][1])):
            if model != m:
                continue
            scored_run = "run3" if (p, u) in RUN3_CONFIGS else "run4"
            z = [meas[r][0].get((m, p, u)) for r in RUNS]
            s = [meas[r][1].get((m, p, u)) for r in RUNS]
            zs, ss = meas[scored_run][0].get((m, p, u)), meas[scored_run][1].get((m, p, u))
            pred = pr["predicted_rule_tokens_per_s"]
            dense = m == "llama-3.1-8b"
            got = zs if dense else ss          # the dense control: its zero file is its real routing (none)
            if got is None:
                continue
            err = pred / got - 1
            errs.setdefault("dense control (zero file)" if dense else f"MoE, ubatch {u}", []).append(err)
            if not dense:
                errs.setdefault("MoE, all (held out)", []).append(err)
            flat, _ = rule_prefill(m, p, u, factor=1.0)
            added = f"{(1 / ss - 1 / zs) * 1e6:.1f}" if ss and zs else "–"
            added_pred = f"{(1 / pred - 1 / flat) * 1e6:.1f}"
            # the two parts of the error: the formula without padding against the zero file (which fills every
            # tile), and the rule's padding time added to the measured zero file against the spread file
            flat_err = f"{flat / zs - 1:+.1%}" if zs else "–"
            tile_only = f"{1 / (1 / zs + 1 / pred - 1 / flat) / ss - 1:+.1%}" if ss and zs else "–"
            if ss and zs and not dense:
                errs.setdefault("zero + predicted padding (diagnostic, uses the measured zero file)", []).append(1 / (1 / zs + 1 / pred - 1 / flat) / ss - 1)
            fmt = lambda v: f"{v:,.0f}" if v else "–"   # noqa: E731
            print(f"| {m} | {p} / {u} | {tiles.get((m, p, u), 1.0):.2f} | {fmt(z[0])} / {fmt(z[1])} | "
                  f"{fmt(s[0])} / {fmt(s[1])} | {ss / zs if ss and zs else float('nan'):.2f} | {pred:,.0f} | "
                  f"{err:+.1%} ({scored_run}{', zero' if dense else ''}) | {added if not dense else '–'} | "
                  f"{added_pred if not dense else '–'} | {flat_err} | {tile_only if not dense else '–'} |")
    print()
    old_method()
    print()
    for k, v in errs.items():
        print(f"{k}: median |error| {statistics.median(abs(e) for e in v):.1%}, median error "
              f"{statistics.median(v):+.1%} over {len(v)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
