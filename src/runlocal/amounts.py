"""Amounts of money and time that `cost` and `best` take (a price, a budget, years, hours a day): each a finite
number within bounds, checked in one place for the CLI, the HTTP API's query parameters, MCP and the site."""

from __future__ import annotations

import math

from .errors import InputError

# What `cost` and `best` take, each a finite number in its range: NaN and ±inf are no price, and past these bounds the
# arithmetic leaves the floats (1e400 is inf; a price over a vanishing number of years overflows the chart's scale).
# The answer rounds to cents and hundredths of an hour, so a share of an hour or a year below 0.01 is no input.
COST_BOUNDS: dict[str, tuple[float, float, str]] = {
    "hours-per-day": (0.01, 24.0, "hours a day"),
    "kwh-price": (0.0, 100.0, "USD per kWh"),
    "years": (0.01, 100.0, "years"),
    "utilization": (1e-6, 1.0, "a share of TDP"),
    "price": (0.01, 1e9, "USD"),
    "rent-price": (1e-4, 1e6, "USD per GPU-hour"),
    "budget": (0.01, 1e9, "USD"),
    # `best --users`: requests of ctx served at once. Each is planned at the whole context on every catalog device,
    # so 64 bounds what one call costs a shared server (1,024 took minutes); the same bound on every door
    "users": (1, 64, "concurrent requests"),
}
# the amounts that count things: whole numbers only
WHOLE_AMOUNTS = frozenset({"users"})


def check_amount(name: str, value: float | None) -> None:
    """One line naming the field for a number outside COST_BOUNDS (NaN and ±inf included); None is left alone."""
    if value is None:
        return
    lo, hi, what = COST_BOUNDS[name]
    whole = name in WHOLE_AMOUNTS
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi
            or (whole and not float(value).is_integer())):
        raise InputError(f"{name}: must be a {'whole' if whole else 'finite'} number of {what} from {_amount(lo)} to "
                         f"{_amount(hi)}, got {value if not isinstance(value, float) else _amount(value)}")


def _amount(x: float) -> str:
    """A bound or value as typed: 1,000,000,000 rather than 1e+09; nan and inf as Python writes them."""
    return f"{int(x):,}" if math.isfinite(x) and float(x).is_integer() else f"{x:g}"
