"""Score the H200 flash-attention run against the predictions committed before it, by fa_depth_rule.md (written
with the rule, before the run): ``python measurements/llamacpp_h200/score_fa_depth.py [h200_fa_depth.jsonl]``.
Reads only the run's records and predictions_fa_depth.json; prints every pair, the medians, the verdict."""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def score(records: list[dict], pred: dict) -> dict:
    """Every pp pair with a committed prediction: measured and predicted fa 0 / fa 1 ratios (the rule's before and
    after), and the fa 0 row's absolute predictions."""
    by: dict = defaultdict(dict)
    for r in records:
        by[(r["model"], r["test"])][r["fa"]] = r["tokens_per_s"]
    preds = {(p["model"], p["test"]): p for p in pred["pairs"] if p.get("scorable")}
    rows = []
    for (model, test), v in by.items():
        p = preds.get((model, test))
        if p is None or 0 not in v or 1 not in v:
            continue
        m = v[0] / v[1]
        t1 = 1.0 / v[1]
        fa = p["fa_kernel_us"] * 1e-6
        before = t1 / (t1 - fa + p["plan_attn_us"] * 1e-6)
        after = t1 / (t1 - fa + p["term_attn_us"] * 1e-6)
        rows.append({"model": model, "test": test, "depth": p["depth"], "fa0": v[0], "fa1": v[1], "m": m,
                     "before": before, "after": after, "err_before": before / m - 1, "err_after": after / m - 1,
                     "abs0_before": p["pred_fa0_tps"] / v[0] - 1, "abs0_after": p["pred_fa0_term_tps"] / v[0] - 1,
                     "abs1": p["pred_fa1_tps"] / v[1] - 1})
    return {"rows": rows}


def med(xs: list[float]) -> float:
    return statistics.median(abs(x) for x in xs) * 100


def report(res: dict, decode: list[dict], pred: dict) -> bool:
    rows = res["rows"]
    print(f"{'model':15} {'test':13} {'fa0 t/s':>8} {'fa1 t/s':>8} {'fa0/fa1':>7} {'before':>7} {'err':>7} "
          f"{'after':>7} {'err':>7} | abs fa0 plan / term, fa1")
    for r in rows:
        print(f"{r['model']:15} {r['test']:13} {r['fa0']:8.0f} {r['fa1']:8.0f} {r['m']:7.3f} {r['before']:7.3f} "
              f"{r['err_before'] * 100:+6.1f}% {r['after']:7.3f} {r['err_after'] * 100:+6.1f}% | "
              f"{r['abs0_before'] * 100:+6.1f}% {r['abs0_after'] * 100:+6.1f}% {r['abs1'] * 100:+6.1f}%")
    if not rows:
        print("no pairs")
        return False
    b, a = med([r["err_before"] for r in rows]), med([r["err_after"] for r in rows])
    print(f"\nall {len(rows)} pairs: ratio |error| median before {b:.1f}% -> after {a:.1f}%; max "
          f"{max(abs(r['err_before']) for r in rows) * 100:.1f}% -> {max(abs(r['err_after']) for r in rows) * 100:.1f}%")
    for d in sorted({r["depth"] for r in rows}):
        sub = [r for r in rows if r["depth"] == d]
        print(f"  depth {d:6d}: {len(sub)} pairs, median {med([r['err_before'] for r in sub]):.1f}% -> "
              f"{med([r['err_after'] for r in sub]):.1f}%")
    print(f"fa 0 rows' own |error| median: plan {med([r['abs0_before'] for r in rows]):.1f}%, with the term "
          f"{med([r['abs0_after'] for r in rows]):.1f}%; fa 1 rows {med([r['abs1'] for r in rows]):.1f}%")
    passed = a < b and len(rows) >= 8
    print(f"VERDICT (fa_depth_rule.md): {'PASS' if passed else 'FAIL'} — median after {a:.1f}% "
          f"{'<' if a < b else '>='} before {b:.1f}% over {len(rows)} pairs (needs >= 8)")
    if decode:
        print("\ndecode (reported, not scored): measured fa 0 / fa 1 t/s, predict_row's")
        dp = {(p["model"], p["test"]): p for p in pred["decode"]}
        tg: dict = defaultdict(dict)
        for r in decode:
            tg[(r["model"], r["test"])][r["fa"]] = r["tokens_per_s"]
        for (model, test), v in tg.items():
            p = dp.get((model, test), {})
            print(f"  {model:15} {test:13} fa0 {v.get(0, 0):7.1f} fa1 {v.get(1, 0):7.1f}  predicted "
                  f"{p.get('pred_fa0_tps', 0):7.1f} / {p.get('pred_fa1_tps', 0):7.1f}")
    print("\nCLI (runlocal check M --gpu h200 --quant Q4_0 --ctx 4096 --json): pp512 and decode at 2,048 predicted")
    for c in pred["cli"]:
        print(f"  {c['model']:15} fa {c['flash_attn']:3} pp512 {c['speed'].get('prefill_tokens_per_s')} "
              f"decode {c['speed'].get('decode_tokens_per_s')}")
    return passed


def main(argv: list[str]) -> int:
    data = Path(argv[0]) if argv else HERE / "h200_fa_depth.jsonl"
    recs = load(data)
    pred = json.loads((HERE / "predictions_fa_depth.json").read_text())
    res = score([r for r in recs if r["test"].startswith("pp")], pred)
    report(res, [r for r in recs if r["test"].startswith("tg")], pred)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
