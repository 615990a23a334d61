"""The power knee of hardware/nvidia_peak.py clock_share, fitted per NVIDIA architecture on the prompt rows
speed_fit.knee_rows selects (moved out of evidence/speed_fit.py, which runs it from refit and leave_one_device_out)."""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING

from runlocal.hardware import speed as S
from runlocal.hardware import token_work as TW
from runlocal.hardware.nvidia_peak import watts_per_tops

from .speed_fit_fa import attn_at_factor

if TYPE_CHECKING:   # pragma: no cover
    from .speed_fit import Row

KNEE_GRID = [x / 100 for x in range(20, 201)]      # 0.20 … 2.00 W per datasheet INT8 TOPS


def fit_power_knees(by_arch: dict[str, list[Row]]) -> dict[str, float]:
    """Per NVIDIA architecture (compute capability), the watts per datasheet TOPS below which a card's prompt rate falls
    in proportion (hardware/nvidia_peak.py clock_share): the knee that minimises the spread of log(measured × FLOPs per
    token / (peak × share)) within each weight kind over that architecture's rows (``by_arch``: speed_fit.knee_rows)
    — scale-free, so it does not depend on the efficiencies fitted after it. Only where the rows hold two cards or more
    whose watts per TOPS differ by a tenth or more, and only a knee that throttles some card of them (else none)."""
    saved = S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR
    S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR = {}, {}
    try:
        base = {id(r): S.reachable_peak(r.device, r.quant, r.backend) or 0.0 for rs in by_arch.values() for r in rs}
    finally:
        S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR = saved
    knees = {}
    for cc, rs in sorted(by_arch.items()):
        ratios = {r.rec["device"]: watts_per_tops(r.device) or 0.0 for r in rs}
        if len(ratios) < 2 or max(ratios.values()) < 1.1 * min(ratios.values()):
            continue
        logs = [(TW.is_float_quant(r.quant), math.log(r.measured * peak_flops(r) / base[id(r)]), ratios[r.rec["device"]])
                for r in rs]
        best = min((knee_spread(logs, k), k) for k in KNEE_GRID)[1]
        if best > min(ratios.values()):
            knees[cc] = best
    return knees


def knee_spread(logs: list[tuple[bool, float, float]], knee: float) -> float:
    """Σ over weight kinds of the squared spread of (log rate at the peak − log clock share at ``knee``)."""
    err = 0.0
    for kind in (False, True):
        xs = [x - math.log(min(1.0, w / knee)) for f, x, w in logs if f == kind]
        err += sum((x - statistics.mean(xs)) ** 2 for x in xs) if xs else 0.0
    return err


def peak_flops(r: Row) -> float:
    """A prompt row's FLOPs per token (matmuls at their tile cost, attention at ATTN_FACTOR; a flash-attention row's
    attention, a sliver of a short prompt's time, is the term's and left out: speed_fit_fa.attn_at_factor)."""
    return r.mm_flops + attn_at_factor(r)


def knee_floors(by_arch: dict[str, list[Row]], knees: dict[str, float]) -> dict[str, float]:
    """Per architecture with a knee, the lowest watts per TOPS among the rows it was fitted on (rounded down, so no
    fitted card is moved by it): clock_share holds a card below it at the share there rather than extrapolate."""
    return {cc: math.floor(1000 * min(watts_per_tops(r.device) or 0.0 for r in by_arch[cc])) / 1000 for cc in knees}


def apply_knees(knees: dict[str, float], rows: list[Row], floors: dict[str, float] | None = None) -> None:
    """Make ``knees`` (and their ``floors``) speed.py's and re-take every prompt row's peak with them (Row.peak holds the
    reachable peak)."""
    S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR = dict(knees), dict(floors or {})
    for r in rows:
        if r.kind == "pp" and r.peak is not None:
            r.peak = S.reachable_peak(r.device, r.quant, r.backend)
