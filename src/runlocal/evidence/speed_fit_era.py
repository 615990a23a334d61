"""Build eras in the speed fit: the entries fitted on current llama.cpp builds alone (hardware/build_era.py), the
older builds' records kept beside them as history, and the decode fit with flash attention's derived KV factor.
Used by runlocal.evidence.speed_fit."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..hardware import speed as S
from ..hardware.build_era import CURRENT_BUILD_ENTRIES, FA_KV_FACTOR, HISTORY_SUFFIX

if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Callable

    from .speed_fit import Row


def current_build(row: Row) -> bool:
    """A record of a 2025-2026 llama.cpp build: marked ``"build_era": "current"`` (measurements/speed/cuda_2025.jsonl)
    or dated 2025 or later. The entries of hardware/build_era.CURRENT_BUILD_ENTRIES are fitted on such records of
    the current-build tuning files alone (fit_all) and predict them; an undated record counts as an older build's."""
    return row.rec.get("build_era") == "current" or str(row.rec.get("date") or "") >= "2025"


def superseded(row: Row) -> bool:
    """An older build's record of an entry fitted on current builds only: history, scored apart (report_history)."""
    return row.base_key in CURRENT_BUILD_ENTRIES and not current_build(row)


def era_consts(row: Row, consts: dict[str, S.Fit]) -> dict[str, S.Fit]:
    """The constants of the row's build era: an older build's row of an entry fitted on current builds only is
    predicted from the entry its own era's records fitted (``<key>@2024``), not from the current builds' entry."""
    if not superseded(row):
        return consts
    return {**consts, row.base_key: consts.get(row.base_key + HISTORY_SUFFIX) or consts[row.klass]}


def fit_decode_fa(rows: list[Row], fallback: S.Fit, fit_decode: Callable[..., tuple[float, float, float]]
                  ) -> tuple[float, float, float]:
    """fit_decode for builds that run flash attention: the KV factor is FA_KV_FACTOR (derived, hardware/build_era.py:
    a KV byte is read once, like a weight byte), so the KV bytes join the weight bytes and only the bandwidth share and
    the per-layer cost are fitted (by ``fit_decode``, speed_fit's)."""
    joined = [replace(r, w_read=r.w_read + FA_KV_FACTOR * r.kv_read, kv_read=0.0) for r in rows]
    eff, layer_us, _ = fit_decode(joined, S.Fit(fallback.decode_eff, fallback.layer_us, 0.0), keep="d")
    return eff, layer_us, FA_KV_FACTOR

