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
    CURRENT_PREFILL_ENTRIES,
    FA_KV_FACTOR,
    HISTORY_SUFFIX,
    arch_key,
    fa_derived,
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
    """An older build's record of an entry fitted on current builds only: history, scored apart (report_history). A
    prompt row only where the entry's prompt constants are split by era too (build_era.CURRENT_PREFILL_ENTRIES)."""
    return (row.base_key in CURRENT_BUILD_ENTRIES and not current_build(row)
            and (row.kind == "tg" or row.base_key in CURRENT_PREFILL_ENTRIES))


def era_consts(row: Row, consts: dict[str, S.Fit]) -> dict[str, S.Fit]:
    """The constants of the row's build era: an older build's row of an entry fitted on current builds only is
    predicted from the entry its own era's records fitted (``<key>@2024``), not from the current builds' entry nor
    their per-architecture prompt entries (``<key>@cc…``), nor from its variant (``<entry>:<variant>``, fitted on current
    builds only: split_eras)."""
    if not superseded(row):
        return consts
    own = consts.get(row.base_key + HISTORY_SUFFIX) or consts[row.klass]
    others = {k: v for k, v in consts.items() if not k.startswith(row.base_key + ARCH_SUFFIX)}
    return {**others, row.base_key: own, row.key: consts.get(history_key(row.key)) or own}


def history_key(key: str) -> str:
    """The older builds' entry of a fit entry: "nvidia-gddr/cuda" → "nvidia-gddr/cuda@2024", a variant
    "<entry>:<v>" → "<entry>@2024:<v>" (its parent, in speed_fit.parent_key's order, is the older builds' backend
    entry)."""
    base, _, variant = key.partition(":")
    return base + HISTORY_SUFFIX + (f":{variant}" if variant else "")


def split_eras(groups: dict[str, list[Row]]) -> dict[str, list[Row]]:
    """The rows each entry of build_era.CURRENT_BUILD_ENTRIES (and its variants) is fitted on, in place: its current
    builds' rows (current_build) where it has any; its older builds' rows fit its history entry (history_key). An entry
    outside CURRENT_PREFILL_ENTRIES keeps every era's prompt rows: its prompt constants are not split by era. An entry
    of CURRENT_PREFILL_ARCHS keeps the current prompt rows of those architectures only; the others' leave it for one of
    their architecture's own (hardware/build_era.py). Returns those per-architecture prompt rows by entry key."""
    arch_rows: dict[str, list[Row]] = defaultdict(list)
    for key in list(groups):
        base = key.split(":")[0]
        if base not in CURRENT_BUILD_ENTRIES:
            continue
        rows = groups[key]
        if not any(current_build(r) for r in rows):
            continue
        groups[history_key(key)] = [r for r in rows if not current_build(r)]
        groups[key] = [r for r in rows if current_build(r) or (r.kind == "pp" and base not in CURRENT_PREFILL_ENTRIES)]
        archs = CURRENT_PREFILL_ARCHS.get(key)
        if archs is None:
            continue
        for r in groups[key]:
            if r.kind == "pp" and r.device.compute_capability not in archs and r.device.compute_capability:
                arch_rows[arch_key(key, r.device.compute_capability)].append(r)
        groups[key] = [r for r in groups[key] if r.kind != "pp" or r.device.compute_capability in archs]
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


def fa_read(row: Row) -> bool:
    """A current build's record of an entry whose flash-attention KV read is derived (build_era.fa_derived): its KV
    factor is FA_KV_FACTOR, not fitted."""
    return row.base_key in CURRENT_BUILD_ENTRIES and current_build(row) and fa_derived(row.base_key)


def fit_decode_fa(rows: list[Row], fallback: S.Fit, fit_decode: Callable[..., tuple[float, float, float]]
                  ) -> tuple[float, float, float]:
    """fit_decode for builds that run flash attention: the KV factor is FA_KV_FACTOR (derived, hardware/build_era.py:
    a KV byte is read once, like a weight byte), so the KV bytes join the weight bytes and only the bandwidth share and
    the per-layer cost are fitted (by ``fit_decode``, speed_fit's)."""
    joined = [replace(r, w_read=r.w_read + FA_KV_FACTOR * r.kv_read, kv_read=0.0) for r in rows]
    eff, layer_us, _ = fit_decode(joined, S.Fit(fallback.decode_eff, fallback.layer_us, 0.0), keep="d")
    return eff, layer_us, FA_KV_FACTOR

