"""Fit hardware/ubatch_speed.py's one constant (STREAM_K_LAUNCH_US) on the tuning rows only.

Tuning rows: the own H100 micro-batch curve (measurements/speed/h100/dense_ubatch_run6.jsonl) and held-out round 6
(measurements/speed/held_out/round6.jsonl, scored once in session 13, tuning since). Never round 8 (held out for the
term). Each sweep (one source, card, model, quant and build column) is compared relative to its own 512 row, so the
fit sees only how speed moves with the micro-batch, not the base formula's error at 512:
error = (predicted(U) / predicted(512)) / (measured(U) / measured(512)) - 1; the constant minimises the median |error|
over the rows at U != 512 (a grid of 0 to 80 µs in 1 µs steps). Prints the grid's optimum, then every row at it.

    python benchmarks/ubatch_fit.py
    python benchmarks/ubatch_fit.py --score round8    # a held-out round's ratios, term on and off, no fitting

Kept in runlocal.evidence so tests/accuracy/test_speed.py imports it; benchmarks/ubatch_fit.py runs it.
"""

import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from runlocal.evidence import MEASUREMENTS
from runlocal.evidence import speed_fit as F
from runlocal.hardware import speed as S
from runlocal.hardware import ubatch_speed as UB

ROOT = MEASUREMENTS / "speed"
TUNING = [ROOT / "h100" / "dense_ubatch_run6.jsonl", ROOT / "held_out" / "round6.jsonl"]


def sweeps(paths: list[Path] = TUNING) -> dict[tuple, list]:
    groups: dict[tuple, list] = defaultdict(list)
    for path in paths:
        recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for row in F.build_rows(recs):
            column = re.search(r"column '([^']*)'", row.rec.get("note", ""))
            key = (row.rec["source_url"], row.rec["device"], row.rec["model"], row.rec["quant"],
                   column.group(1) if column else "")
            groups[key].append(row)
    return {k: v for k, v in groups.items() if any(r.ubatch == 512 for r in v) and len(v) > 1}


def ratio_errors(groups: dict[tuple, list], launch_us: float, on: bool = True) -> list[tuple[tuple, Any, float]]:
    saved, UB.STREAM_K_LAUNCH_US = UB.STREAM_K_LAUNCH_US, launch_us
    out = []
    try:
        with UB.scored(on):
            for key, rows in groups.items():
                ref = next(r for r in rows if r.ubatch == 512)
                p_ref = F.predict_row(ref, S.FIT, S.SPLIT_OVERHEAD_MS)
                for r in rows:
                    p = F.predict_row(r, S.FIT, S.SPLIT_OVERHEAD_MS)
                    if r is ref or not p or not p_ref:
                        continue
                    out.append((key, r, (p / p_ref) / (r.measured / ref.measured) - 1))
    finally:
        UB.STREAM_K_LAUNCH_US = saved
    return out


def score(name: str) -> int:
    """A held-out round's sweeps relative to their 512 rows, with the committed constant and without the term."""
    groups = sweeps([ROOT / "held_out" / f"{name}.jsonl"])
    on, off = ratio_errors(groups, UB.STREAM_K_LAUNCH_US), ratio_errors(groups, 0.0, on=False)
    print(f"{name}: {len(groups)} sweeps with a 512 row, {len(on)} rows at other micro-batches (ratio to the 512 row)")
    for label, errs in (("term on", on), ("term off", off)):
        print(f"  {label}: median |ratio error| {statistics.median(abs(e) for *_, e in errs):.1%}" if errs else
              f"  {label}: no rows")
    for (key, r, e_on), (_, _, e_off) in zip(on, off, strict=True):
        print(f"  {key[1]:<10} {key[2]:<14} {key[3]:<7} ub {r.ubatch:>5}  on {e_on:+7.1%}  off {e_off:+7.1%}  "
              f"{key[4][:26]:<26} {key[0][-26:]}")
    return 0


def main() -> int:
    if "--score" in sys.argv:
        return score(sys.argv[sys.argv.index("--score") + 1])
    groups = sweeps()
    n_rows = sum(len(v) - 1 for v in groups.values())
    print(f"{len(groups)} tuning sweeps with a 512 row, {n_rows} rows at other micro-batches")
    off = statistics.median(abs(e) for *_, e in ratio_errors(groups, 0.0, on=False))
    print(f"no term (every micro-batch priced as 512): median |ratio error| {off:.1%}")
    base = statistics.median(abs(e) for *_, e in ratio_errors(groups, 0.0))
    grid = [(statistics.median(abs(e) for *_, e in ratio_errors(groups, float(us))), us) for us in range(81)]
    best, best_us = min(grid)
    print(f"launch cost 0 µs (only the tiled launches' idle SMs): median |ratio error| {base:.1%}")
    print(f"best: STREAM_K_LAUNCH_US = {best_us} µs, median |ratio error| {best:.1%}")
    print("grid: " + ", ".join(f"{us}:{m:.1%}" for m, us in grid[::5]))
    for key, r, e in ratio_errors(groups, float(best_us)):
        print(f"  {key[1]:<10} {key[2]:<16} {key[3]:<7} ub {r.ubatch:>5}  {e:+7.1%}  {key[4][:28]:<28} {key[0][-28:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
