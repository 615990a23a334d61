"""The flash-attention prompt term's one constant (hardware/fa_prefill.py FA_MMA_EFF), fitted on the tuning rows
whose attention it prices, and which rows those are."""

from __future__ import annotations

import math
import statistics
from contextlib import contextmanager
from typing import TYPE_CHECKING

from runlocal.hardware import fa_prefill as FA
from runlocal.hardware import speed as S
from runlocal.hardware.nvidia_peak import clock_share

from .speed_fit_era import current_build

if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Callable, Iterator

    from .speed_fit import Row


_priced = True      # term_off(): a held-out round scored as before the term too (benchmarks/speed_accuracy.py)


@contextmanager
def term_off() -> Iterator[None]:
    """Score rows inside the block as before the term: every row's attention at ATTN_FACTOR (plans are untouched)."""
    global _priced
    saved, _priced = _priced, False
    try:
        yield
    finally:
        _priced = saved


def term_on() -> bool:
    """Whether rows are priced with the term now (not inside term_off)."""
    return _priced


def fa_priced(row: Row) -> bool:
    """A prompt row whose attention runs through llama.cpp's CUDA MMA FlashAttention kernel (fa_prefill.applies: a
    record with ``"fa": 1`` on CUDA, an NVIDIA card of compute capability 7.0+), of a 2025-2026 build (the kernel
    landed in PR #11583, early 2025; before it the WMMA kernel ran, which the term is not derived from): the term prices
    it, not ATTN_FACTOR."""
    return (_priced and row.kind == "pp" and row.fa and row.n_devices == 1 and current_build(row)
            and FA.applies(row.device, row.backend, True, True))


# where the fit of FA_MMA_EFF starts (speed_fit.refit fits it and the rest in turn until it repeats)
FA_EFF_START = 1.0


def at_depth(row: Row) -> bool:
    """A test that starts with tokens already in the cache (llama-bench's ``@dD``): the attention a sizeable share."""
    return "@d" in row.rec["test"]


def fa_seconds(row: Row) -> float:
    """The row's attention seconds at the current FA_MMA_EFF where the term prices them; 0.0 elsewhere."""
    term = fa_term(row, S.FA_MMA_EFF)
    return term.seconds_per_token if term else 0.0


def fa_term(row: Row, eff: float) -> FA.FaAttention | None:
    """The row's attention as the kernel's term at ``eff``; None for a row the term does not price."""
    if not fa_priced(row):
        return None
    clock = clock_share(row.device, S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR)
    return FA.kernel_term(*row.attn_products, row.device, clock, eff)


def attn_at_factor(row: Row) -> float:
    """A prompt row's attention FLOPs at ATTN_FACTOR, to add to its matmuls'; 0.0 where the term prices them apart
    (fa_seconds)."""
    return 0.0 if fa_priced(row) else S.ATTN_FACTOR * row.attn_flops


def fit_fa_eff(rows: list[Row], consts: dict[str, S.Fit],
               prefill_row: Callable[[Row, dict[str, S.Fit], float | None], float | None], fallback: float) -> float:
    """FA_MMA_EFF: the median (in log) over the rows at depth (a cache already holding tokens: the attention a
    sizeable share of the token's time) of (the attention's seconds at the full tensor rates) / (the measured seconds
    less the rest of the token's time, predicted by the other constants: ``prefill_row`` with no attention); rows the
    rest alone explains are left out; ``fallback`` where no row is left."""
    ratios = []
    for r in rows:
        term = fa_term(r, 1.0)
        rest = prefill_row(r, consts, 0.0)
        if term is None or not rest or not at_depth(r):   # no depth: the attention is a small share
            continue
        left = 1.0 / r.measured - 1.0 / rest
        if left > 0:
            ratios.append(math.log(term.seconds_per_token / left))
    return round(math.exp(statistics.median(ratios)), 3) if ratios else fallback
