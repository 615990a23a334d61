"""Build eras in the speed fit: the entries fitted on current llama.cpp builds alone (hardware/build_era.py), the
older builds' records kept beside them as history, the current builds' prompt rate per architecture, and the decode fit
with flash attention's derived KV factor. Used by runlocal.evidence.speed_fit."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING

from ..hardware import speed as S
from ..hardware.build_era import (
    ARCH_SUFFIX,
    CURRENT_BUILD_ENTRIES,
    CURRENT_PREFILL_ARCHS,
    FA_KV_FACTOR,
    HISTORY_SUFFIX,
    arch_key,
)

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
    predicted from the entry its own era's records fitted (``<key>@2024``), not from the current builds' entry nor
    their per-architecture prompt entries (``<key>@cc…``)."""
    if not superseded(row):
        return consts
    own = {k: v for k, v in consts.items() if not k.startswith(row.base_key + ARCH_SUFFIX)}
    return {**own, row.base_key: consts.get(row.base_key + HISTORY_SUFFIX) or consts[row.klass]}


def split_eras(groups: dict[str, list[Row]]) -> dict[str, list[Row]]:
    """Regroup the entries fitted on current builds only (in place): their older builds' rows become the history entry
    (``<key>@2024``), and their prompt rows of architectures other than CURRENT_PREFILL_ARCHS leave the entry for one of
    their architecture's own (hardware/build_era.py). Returns those per-architecture prompt rows by entry key."""
    arch_rows: dict[str, list[Row]] = defaultdict(list)
    for key in CURRENT_BUILD_ENTRIES:
        current = [r for r in groups.get(key, []) if current_build(r)]
        if not current:
            continue
        groups[key + HISTORY_SUFFIX] = [r for r in groups[key] if not current_build(r)]
        archs = CURRENT_PREFILL_ARCHS.get(key, ())
        groups[key] = [r for r in current if r.kind != "pp" or r.device.compute_capability in archs]
        for r in current:
            if r.kind == "pp" and r.device.compute_capability not in archs and r.device.compute_capability:
                arch_rows[arch_key(key, r.device.compute_capability)].append(r)
    return arch_rows


def arch_prefill_entries(arch_rows: dict[str, list[Row]], consts: dict[str, S.Fit],
                         quant_eff: Callable[[list[Row], float], float | None]) -> dict[str, S.Fit]:
    """Per architecture, the entry's constants with the prompt efficiency its rows fit (``quant_eff``: speed_fit's
    fit_prefill on integer quants at the entry's per-layer cost, None under two rows); none where the rows cannot."""
    out = {}
    for key, rows in sorted(arch_rows.items()):
        entry = consts.get(key.split(ARCH_SUFFIX)[0])
        eff = quant_eff(rows, entry.prefill_layer_us) if entry else None
        if entry and eff is not None:
            out[key] = replace(entry, prefill_eff_quant=round(float(eff), 3))
    return out


def fit_decode_fa(rows: list[Row], fallback: S.Fit, fit_decode: Callable[..., tuple[float, float, float]]
                  ) -> tuple[float, float, float]:
    """fit_decode for builds that run flash attention: the KV factor is FA_KV_FACTOR (derived, hardware/build_era.py:
    a KV byte is read once, like a weight byte), so the KV bytes join the weight bytes and only the bandwidth share and
    the per-layer cost are fitted (by ``fit_decode``, speed_fit's)."""
    joined = [replace(r, w_read=r.w_read + FA_KV_FACTOR * r.kv_read, kv_read=0.0) for r in rows]
    eff, layer_us, _ = fit_decode(joined, S.Fit(fallback.decode_eff, fallback.layer_us, 0.0), keep="d")
    return eff, layer_us, FA_KV_FACTOR

