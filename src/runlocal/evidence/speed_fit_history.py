"""Records scored apart from the fit: the older builds' records of the speed-fit entries fitted on current builds alone
(hardware/build_era.py), and the records of a refit that failed its held-out round (``fit_scope: "scored_apart"``):
reports benchmarks/speed_accuracy.py passes to runlocal.evidence.speed_report.main."""

from __future__ import annotations

from ..hardware.build_era import HISTORY_SUFFIX
from .speed_fit import build_rows, load_records
from .speed_fit_era import superseded
from .speed_report import backend_errors, group_errors, print_group_table


def report_history(consts, split_ms: float, *, quiet: bool) -> None:
    """Older builds' records of the entries fitted on current builds only (hardware/build_era.py): scored apart, with
    the current builds' constants a plan uses (how far those builds lie from today's figures) and with their own era's
    (the class entry they still fit)."""
    old = [r for r in build_rows(load_records()) if superseded(r)]
    if not old:
        return
    # predict_row takes an older build's record's own era's entry: to score them with today's — the current entry and
    # each architecture's current prompt rate — the same records are predicted as if of a current build
    as_today = build_rows([{**r.rec, "build_era": "current"} for r in old])
    for title, rows in (("the current builds' entries for every record (each architecture's prompt rate)", as_today),
                        (f"their own era's constants (the {HISTORY_SUFFIX} entries)", old)):
        if not quiet:
            print(f"\nHistory ({len(old)} records of 2024 builds, not fitted for the default), with {title}:")
        print_group_table(f"History, with {title}", "fit entry",
                          group_errors(rows, consts, split_ms, lambda r: r.base_key))


def report_scored_apart(consts, split_ms: float, *, quiet: bool) -> None:
    """Records kept as evidence that fit no entry (``fit_scope: "scored_apart"``; speed_fit.load_records leaves them
    out): backends_2026.jsonl's Metal rows, whose refit failed held-out backends2 (hardware/build_era.py), and
    cuda_2025.jsonl's RTX 2060 SmolLM2-135M decode row, which alone took the GDDR CUDA entry's decode fit above the
    card's bandwidth (held_out/newbuilds3_queries.md, amendment 1), and pascal_2026.jsonl's GTX 1060 TinyLlama decode
    row, mostly host overhead (pascal2_queries.md, amendment 1). Scored with the constants a plan uses, every record
    then |error| per fit entry."""
    rows = build_rows(load_records(scope="scored_apart"))
    if not rows:
        return
    if not quiet:
        print(f"\nScored apart ({len(rows)} records that fit no entry: a refit on them failed its held-out round "
              "or left the physical range):")
        backend_errors(rows, consts, split_ms, quiet=False)     # every record, predicted and measured
    print_group_table("Scored apart, with the constants a plan uses", "fit entry",
                      group_errors(rows, consts, split_ms, lambda r: r.key))
