"""The older builds' records of the speed-fit entries fitted on current builds alone (hardware/build_era.py),
scored apart: a report benchmarks/speed_accuracy.py passes to runlocal.evidence.speed_report.main."""

from __future__ import annotations

from ..hardware.build_era import CURRENT_BUILD_ENTRIES, HISTORY_SUFFIX
from .speed_fit import build_rows, load_records
from .speed_fit_era import history_key, superseded
from .speed_report import group_errors, print_group_table


def report_history(consts, split_ms: float, *, quiet: bool) -> None:
    """Older builds' records of the entries fitted on current builds only (hardware/build_era.py): scored apart, with
    the current builds' constants a plan uses (how far those builds lie from today's figures) and with their own era's
    (the class entry they still fit)."""
    old = [r for r in build_rows(load_records()) if superseded(r)]
    if not old:
        return
    # predict_row takes an older build's record's own era's entry: to score them with today's, that entry is today's
    today = {**consts, **{history_key(k): v for k, v in consts.items()
                          if k.split(":")[0] in CURRENT_BUILD_ENTRIES and HISTORY_SUFFIX not in k}}
    for title, fit in (("the current builds' entry for every record (Ampere's prompt rate included)", today),
                       (f"their own era's constants (the {HISTORY_SUFFIX} entries)", consts)):
        if not quiet:
            print(f"\nHistory ({len(old)} records of 2024 builds, not fitted for the default), with {title}:")
        print_group_table(f"History, with {title}", "fit entry",
                          group_errors(old, fit, split_ms, lambda r: r.base_key))
