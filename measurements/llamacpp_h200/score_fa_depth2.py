"""Score the second H200 flash-attention run against the predictions committed before it, by fa_depth2_rule.md:
``python measurements/llamacpp_h200/score_fa_depth2.py [h200_fa_depth2.jsonl]``. Reads only the run's records and
predictions_fa_depth2.json; prints every pair, the medians per term and per depth, the verdicts."""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from predict_fa_depth2 import ratios  # noqa: E402


def med(xs: list[float]) -> float:
    return statistics.median(abs(x) for x in xs) * 100


def verdict(name: str, rows: list[dict]) -> bool:
    b, a = med([r["eb"] for r in rows]), med([r["ea"] for r in rows])
    print(f"{name}: {len(rows)} pairs, ratio |error| median before {b:.1f}% -> after {a:.1f}%; max "
          f"{max(abs(r['eb']) for r in rows) * 100:.1f}% -> {max(abs(r['ea']) for r in rows) * 100:.1f}%")
    for d in sorted({r["depth"] for r in rows}):
        sub = [r for r in rows if r["depth"] == d]
        print(f"  depth {d:6d}: {len(sub)} pairs, median {med([r['eb'] for r in sub]):.1f}% -> "
              f"{med([r['ea'] for r in sub]):.1f}%")
    passed = a < b and len(rows) >= 8
    print(f"  VERDICT (fa_depth2_rule.md): {'PASS' if passed else 'FAIL'} — after {a:.1f}% "
          f"{'<' if a < b else '>='} before {b:.1f}% over {len(rows)} pairs (needs >= 8)")
    return passed


def main(argv: list[str]) -> int:
    data = Path(argv[0]) if argv else HERE / "h200_fa_depth2.jsonl"
    recs = [json.loads(x) for x in data.read_text().splitlines() if x.strip()]
    pred = json.loads((HERE / "predictions_fa_depth2.json").read_text())
    rate: dict = {0: {}, 1: {}}
    for r in recs:
        rate[r["fa"]][(r["model"], r["test"])] = r["tokens_per_s"]
    out: dict = {"pp": [], "tg": []}
    print(f"{'model':15} {'test':13} {'fa0 t/s':>8} {'fa1 t/s':>8} {'fa0/fa1':>7} {'before':>7} {'err':>7} "
          f"{'after':>7} {'err':>7}")
    for p in pred["pairs"]:
        f0 = {t: v for (m, t), v in rate[0].items() if m == p["model"]}
        f1 = {t: v for (m, t), v in rate[1].items() if m == p["model"]}
        for kind, test in (("pp", p["pp_test"]), ("tg", p["tg_test"])):
            if test not in f0 or test not in f1:
                continue
            m, b, a = ratios(p, f0, f1)[kind]
            out[kind].append({"depth": p["depth"], "eb": b / m - 1, "ea": a / m - 1})
            print(f"{p['model']:15} {test:13} {f0[test]:8.1f} {f1[test]:8.1f} {m:7.3f} {b:7.3f} {(b / m - 1) * 100:+6.1f}% "
                  f"{a:7.3f} {(a / m - 1) * 100:+6.1f}%")
    print()
    verdict("prompt term (pp512, fa_off_prefill.py)", out["pp"])
    verdict("decode term (tg32, fa_off_decode.py)", out["tg"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
