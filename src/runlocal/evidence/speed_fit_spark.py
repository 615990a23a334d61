"""The DGX Spark / GB10 prompt rate (the ``soc/cuda`` fit entry) against llama-bench rows: tuning and held out apart.
Run: ``python -m runlocal.evidence.speed_fit_spark`` (benchmarks/speed_accuracy.py prints the same section).

Rule, sources and split: measurements/speed/held_out/spark_queries.md (session 23, committed before any query).
Tuning: llama.cpp's own ``benches/dgx-spark.md`` at 4c7e9893 (build b6918; measurements/speed/spark_2026.jsonl, 24
pp2048 rows of five models at depth 0 … 32,768, ``fit_scope: "backend"``). speed_fit.fit_all fits the entry's
quantized-weight prompt efficiency on its single-device rows at depth 0 (five: gpt-oss-20b / 120b MXFP4,
Qwen3-Coder-30B-A3B and Qwen2.5-Coder-7B Q8_0, gemma-3-4b Q4_0); its flash-attention rows at depth are priced by the
FA term (hardware/fa_prefill.py) at the share other cards fitted and fit nothing. Held out: held_out/spark.jsonl, the
gpt-oss-20b rows of a page holding the same author's b6767 run (not an independent source: the rule's pass needs two).

The rows are scored with the fitted constants whether or not plans apply the entry (hardware/soc_prompt.py): the
evidence path prices a row from the fit table alone, as for every other entry."""

from __future__ import annotations

import math
import statistics
import sys

from ..hardware import speed as S
from .speed_fit import Row, build_rows, fit_prefill, load_held_out, load_records, predict_row, prefill_rows
from .speed_report import p90, pct

ENTRY = "soc/cuda"
HELD_OUT_ROUND = "spark"
PASS_MDAPE = 0.25          # spark_queries.md: the pass, fixed before any query
PASS_ROWS, PASS_SOURCES = 4, 2


def spark_rows(rows: list[Row]) -> list[Row]:
    """Single-device CUDA prompt rows of an NVIDIA unified-memory chip (the soc/cuda entry's)."""
    return [r for r in rows if r.kind == "pp" and r.base_key == ENTRY and r.n_devices == 1]


def tuning_rows() -> list[Row]:
    return spark_rows(build_rows(load_records()))


def held_out_rows() -> list[Row]:
    return spark_rows(build_rows(load_held_out(HELD_OUT_ROUND)))


def errors(rows: list[Row], consts: dict[str, S.Fit], split_ms: float) -> list[tuple[Row, float | None]]:
    """Each row and its signed error (predicted − measured) / measured; None where no prediction is made."""
    out = []
    for r in rows:
        p = predict_row(r, consts, split_ms)
        out.append((r, None if p is None else pct(p, r.measured)))
    return out


def summary(errs: list[tuple[Row, float | None]]) -> dict[str, float]:
    """n, median and p90 of |error| over the rows predicted; ``sources``: how many source URLs they come from."""
    vals = [abs(e) for _, e in errs if e is not None]
    return {"n": len(vals), "median": statistics.median(vals) if vals else math.nan,
            "p90": p90(vals) if vals else math.nan,
            "sources": len({r.rec["source_url"] for r, e in errs if e is not None})}


def leave_one_model_out(rows: list[Row], consts: dict[str, S.Fit]) -> list[tuple[Row, float]]:
    """Each depth-0 tuning row predicted from the efficiency the other models' rows fit (fit_prefill, as fit_all fits
    it: median in log, at the entry's per-layer cost): how far one model's rate carries to another on this chip."""
    entry = consts[ENTRY]
    fitting = [r for r in prefill_rows(rows, False) if "@" not in r.rec["test"]]
    out = []
    for r in fitting:
        eff = fit_prefill([o for o in fitting if o.rec["model"] != r.rec["model"]], False, entry.prefill_layer_us)
        if eff is None:
            continue
        p = predict_row(r, {**consts, ENTRY: S.Fit(entry.decode_eff, entry.layer_us, entry.kv_factor, eff,
                                                    entry.prefill_eff_float, entry.prefill_layer_us)}, 0.0)
        if p is not None:
            out.append((r, pct(p, r.measured)))
    return out


def verdict(held: dict[str, float]) -> str:
    """The rule's pass: MdAPE ≤ 25 % over ≥ 4 held-out rows from ≥ 2 sources."""
    if held["n"] < PASS_ROWS or held["sources"] < PASS_SOURCES:
        return (f"TOO FEW TO JUDGE ({held['n']} rows from {held['sources']} source"
                f"{'s' if held['sources'] != 1 else ''}; the pass needs ≥ {PASS_ROWS} from ≥ {PASS_SOURCES})")
    return "PASS" if held["median"] <= PASS_MDAPE else "FAIL"


def _print_rows(title: str, errs: list[tuple[Row, float | None]]) -> None:
    print(f"\n  {title}")
    for r, e in errs:
        p = "not predicted" if e is None else f"{r.measured * (1 + e):9.1f}  {e:+7.1%}"
        print(f"    {r.rec['model']:20} {r.rec['quant']:6} {r.rec['test']:16} {r.rec.get('build', ''):18} "
              f"measured {r.measured:9.2f}  predicted {p}")


def _line(label: str, s: dict[str, float]) -> str:
    return (f"  {label}: MdAPE {s['median']:.1%}, p90 {s['p90']:.1%} over {s['n']} rows "
            f"({s['sources']} source{'s' if s['sources'] != 1 else ''})")


def report_spark(consts: dict[str, S.Fit], split_ms: float, *, quiet: bool) -> dict[str, dict[str, float]]:
    """Print the section; return the summaries (tuning at depth 0 / at depth, leave-one-model-out, held out)."""
    entry = consts.get(ENTRY)
    print(f"\nDGX Spark / GB10 prompt rate (the {ENTRY} entry; rule measurements/speed/held_out/spark_queries.md)")
    if entry is None:
        print(f"  no {ENTRY} entry in the constants: nothing to score")
        return {}
    print(f"  {ENTRY}: prefill_eff_quant {entry.prefill_eff_quant:g} of the published peak (fitted on the tuning rows "
          f"at depth 0), prefill_eff_float {entry.prefill_eff_float:g} (no float-weight row: the parent's)")
    tune = errors(tuning_rows(), consts, split_ms)
    held = errors(held_out_rows(), consts, split_ms)
    lomo = leave_one_model_out([r for r, _ in tune], consts)
    at0 = [(r, e) for r, e in tune if "@" not in r.rec["test"]]
    deep = [(r, e) for r, e in tune if "@" in r.rec["test"]]
    if not quiet:
        _print_rows("tuning (in sample; the depth rows fit nothing, their attention the FA term's):", tune)
        _print_rows("tuning at depth 0, each model from the others' efficiency (leave-one-model-out):",
                    [(r, e) for r, e in lomo])
        _print_rows("held out (never fitted):", held)
    out = {"tuning_d0": summary(at0), "tuning_depth": summary(deep), "lomo": summary(list(lomo)),
           "held_out": summary(held)}
    print(_line("tuning at depth 0 (in sample)", out["tuning_d0"]))
    print(_line("tuning at depth > 0 (in sample for the efficiency, the FA share from other cards)", out["tuning_depth"]))
    print(_line("tuning at depth 0, leave-one-model-out", out["lomo"]))
    print(_line("held out", out["held_out"]) + f" — {verdict(out['held_out'])}")
    return out


def report(consts: dict[str, S.Fit], split_ms: float, *, quiet: bool) -> None:
    """benchmarks/speed_accuracy.py's hook."""
    report_spark(consts, split_ms, quiet=quiet)


if __name__ == "__main__":     # pragma: no cover
    report_spark(S.FIT, S.SPLIT_OVERHEAD_MS, quiet="--quiet" in sys.argv)
