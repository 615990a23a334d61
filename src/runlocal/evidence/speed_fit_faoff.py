"""The flash-attention-off prompt term (hardware/fa_off_prefill.py) scored as a ratio within pairs: the same card,
build, model and test run with ``-fa 0`` and ``-fa 1`` on CUDA. Run: ``python -m runlocal.evidence.speed_fit_faoff``
(benchmarks/speed_accuracy.py prints the same section).

A pair's ratio is fa 0 t/s ÷ fa 1 t/s. Predicted from the measured fa 1 row, so the per-architecture prompt rates
cancel: fa 0's seconds a token = fa 1's measured seconds − the FlashAttention kernel's term (fa_prefill.py) + the
unfused attention — "before" priced as a plan prices it now (ATTN_FACTOR × the attention's FLOPs at the row's matmul
rate: the gap between the model's own fa 0 and fa 1 predictions), "after" as the term. Tuning pairs: cuda_2025.jsonl's
(discussion #15013, quoted) and faoff_2026.jsonl's (``fit_scope: "fa_pair"``, rule held_out/faoff_queries.md); the
round's held-out part (held_out/faoff.jsonl) is empty. The term fits no constant, so tuning is a check of its
derivation, not a fit."""

from __future__ import annotations

import statistics
import sys
from typing import TYPE_CHECKING

from ..hardware import speed as S
from ..hardware.fa_off_prefill import FaOffAttention, fa_off_attention
from ..hardware.fa_off_prefill import applies as fa_off_applies
from ..hardware.nvidia_peak import clock_share
from .speed_fit import build_rows, fit_for, load_held_out, load_records, parse_test, predict_row, record_model
from .speed_fit_era import current_build
from .speed_fit_fa import fa_term

if TYPE_CHECKING:   # pragma: no cover
    from .speed_fit import Row

PAIR_SCOPE = "fa_pair"
# the records' runs left swa_full at the C API's default, true (llama_context_default_params, llama-context.cpp @0c1e57098:
# fa_depth_bench.py; llama-bench starts from the same defaults): their sliding layers' caches hold every cell
SWA_FULL_RECORDS = True
HELD_OUT_ROUND = "faoff"


def pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    """(fa 0, fa 1) rows of the same card, build, model, quant and test: single-GPU CUDA prompt rows of 2025-2026
    builds on a card the term applies to."""
    by: dict[tuple, dict[int, Row]] = {}
    for r in rows:
        rec = r.rec
        if (r.kind != "pp" or r.n_devices != 1 or rec.get("fa") not in (0, 1) or not current_build(r)
                or not fa_off_applies(r.device, r.backend, True, False)):
            continue
        key = (rec["device"], rec.get("build"), rec["model"], rec["quant"], rec["test"], rec.get("n_ubatch"))
        by.setdefault(key, {})[rec["fa"]] = r
    return [(v[0], v[1]) for v in by.values() if 0 in v and 1 in v]


def tuning_pairs() -> list[tuple[Row, Row]]:
    return pairs(build_rows(load_records()) + build_rows(load_records(scope=PAIR_SCOPE)))


def held_out_pairs() -> list[tuple[Row, Row]]:
    return pairs(build_rows(load_held_out(HELD_OUT_ROUND)))


def off_term(row: Row, consts: dict[str, S.Fit]) -> FaOffAttention:
    """The term for a pair's fa 0 row: its prompt and depth, its card, its entry's decode share."""
    _, n, depth = parse_test(row.rec["test"])
    clock = clock_share(row.device, S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR)
    return fa_off_attention(record_model(row.rec["model"]), row.device, depth, n, row.ubatch, clock,
                            fit_for(row, consts).decode_eff, swa_full=bool(row.rec.get("swa_full", SWA_FULL_RECORDS)))


def ratios(pair: tuple[Row, Row], consts: dict[str, S.Fit],
           split_ms: float) -> tuple[float, float, float, float, float] | None:
    """(measured, before, after) fa 0 ÷ fa 1 of a pair, the predictions from the measured fa 1 row (module docstring);
    then the fa 0 row's own prediction before and after (from the model's fa 1 prediction: the prompt rates count)."""
    off, on = pair
    p0, p1, fa = predict_row(off, consts, split_ms), predict_row(on, consts, split_ms), fa_term(on, S.FA_MMA_EFF)
    if not p0 or not p1 or fa is None:
        return None
    t1 = 1.0 / on.measured
    at_factor = 1.0 / p0 - 1.0 / p1 + fa.seconds_per_token   # the model's fa 0 attention: ATTN_FACTOR × FLOPs
    before = t1 / (t1 - fa.seconds_per_token + at_factor)
    term = off_term(off, consts).seconds_per_token
    after = t1 / (t1 - fa.seconds_per_token + term)
    return off.measured / on.measured, before, after, p0, 1.0 / (1.0 / p1 - fa.seconds_per_token + term)


def report_faoff(consts: dict[str, S.Fit], split_ms: float, *, quiet: bool = False) -> None:
    """The pairs' ratio errors before → after, tuning and held out apart."""
    for title, got in (("tuning", tuning_pairs()), ("held out (held_out/faoff.jsonl)", held_out_pairs())):
        scored = [(p, r) for p in got if (r := ratios(p, consts, split_ms))]
        print(f"\nFlash attention off vs on, CUDA prompt pairs, {title}: {len(scored)} pairs "
              "(hardware/fa_off_prefill.py, not applied; rule held_out/faoff_queries.md)")
        if not scored:
            print("  none")
            continue
        if not quiet:
            print(f"  {'device':18} {'model':18} {'test':8} {'fa0/fa1':>8} {'before':>8} {'err':>7} {'after':>8} {'err':>7}")
            for (off, _), (m, b, a, *_full) in scored:
                print(f"  {off.rec['device']:18} {off.rec['model']:18} {off.rec['test']:8} {m:8.3f} {b:8.3f} "
                      f"{(b / m - 1) * 100:+6.1f}% {a:8.3f} {(a / m - 1) * 100:+6.1f}%")
        before = [abs(r[1] / r[0] - 1) * 100 for _, r in scored]
        after = [abs(r[2] / r[0] - 1) * 100 for _, r in scored]
        full = [(abs(r[3] / p[0].measured - 1) * 100, abs(r[4] / p[0].measured - 1) * 100) for p, r in scored]
        print(f"  ratio |error| median {statistics.median(before):.1f}% → {statistics.median(after):.1f}%, "
              f"max {max(before):.1f}% → {max(after):.1f}%; the fa 0 rows' own |error| median "
              f"{statistics.median(f[0] for f in full):.1f}% → {statistics.median(f[1] for f in full):.1f}%")


if __name__ == "__main__":   # pragma: no cover
    report_faoff(dict(S.FIT), S.SPLIT_OVERHEAD_MS, quiet="--quiet" in sys.argv)
