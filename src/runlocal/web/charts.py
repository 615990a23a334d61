"""Charts drawn on the server as SVG: memory against context, and owning against renting.

Server-side so that a page is whole without JavaScript, every label is text a screen reader and a
search box can find, and the figures are the plan's own. Each chart keeps its labels inside its box
(wide left margin for "133.8 GiB", end-anchored labels near the right edge, labels pushed apart); the memory
chart draws none over its plot: a legend under it, the largest context's label in the margin above.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from markupsafe import Markup, escape

from ..units import format_bytes

COLORS = ("#2f5fb3", "#b3462f", "#2f8a4f", "#8a5a00", "#6b3fa0", "#00707a", "#a0306b", "#4d4d4d")
W, H = 480, 280
LEFT, RIGHT, TOP, BOTTOM = 74, 12, 14, 40
FONT = 14


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]     # (x, y) in data units
    capacity: float | None = None               # a horizontal line in the series' colour: the device's limit
    kept: float = 0                             # bytes of the device kept free below its capacity (--fit's margin)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _spread(ys: list[float], gap: float, lo: float, hi: float) -> list[float]:
    """Label positions at least ``gap`` apart, kept within [lo, hi], in the given order of ys."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    out = list(ys)
    for a, b in itertools.pairwise(order):
        if out[b] - out[a] < gap:
            out[b] = out[a] + gap
    over = max(0.0, max(out, default=lo) - hi)
    return [min(max(y - over, lo), hi) for y in out]


def _ctx_label(n: float) -> str:
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


MEMORY_TOP = 30            # the memory chart's top margin: the largest-context label sits there, above every line
LEGEND_ROW = 20             # one legend row per device, under the axis title: no label is drawn over the plot
LEGEND_SWATCH = 18


# a legend row's text budget: sans-serif at FONT averages ~0.5 em a character (digits 0.55 em, capitals wider),
# so 0.56 em keeps a row inside the chart's width; a longer entry wraps (review19 #12: "2 × NVIDIA GeForce RTX 3090
# (each): 22.6 GiB usable (1 GiB kept free)" ran 70 units past the 480-unit chart on a phone)
CHAR_EM = 0.56
LEGEND_TEXT_X = 8 + 2 * LEGEND_SWATCH + 10


# the legend's text, a size below the axis labels' (review21 #12: at FONT it read larger than the ticks it explains)
LEGEND_FONT = 12
# a limit more than this many times the tallest line (and the smallest limit) is stated in the legend, not drawn: a
# 32 GiB RAM line stretched the axis to 30 GiB and squashed a 6-8 GiB GPU's lines into its bottom fifth (review21 #12)
OFF_SCALE = 2.0


def _wrapped(text: str) -> list[str]:
    """``text`` in rows that fit the legend's width, broken between words."""
    budget = int((W - LEGEND_TEXT_X - 8) / (CHAR_EM * LEGEND_FONT))
    rows: list[str] = []
    for word in text.split(" "):
        if rows and len(rows[-1]) + 1 + len(word) <= budget:
            rows[-1] += " " + word
        else:
            rows.append(word)
    return rows


def drawn_limits(series: list[Series]) -> list[bool]:
    """Which series' limits the chart draws: those within OFF_SCALE × the larger of the tallest line and the smallest
    limit; a limit far above every line (the host's RAM beside a small GPU) is only stated in the legend."""
    caps = [s.capacity for s in series if s.capacity]
    if not caps:
        return [False] * len(series)
    tallest = max((y for s in series for _, y in s.points), default=0)
    reach = OFF_SCALE * max(tallest, min(caps))
    return [s.capacity is not None and 0 < s.capacity <= reach for s in series]


def _legend_texts(series: list[Series]) -> list[list[str]]:
    texts = []
    for s, drawn in zip(series, drawn_limits(series)):
        text = s.label
        if s.capacity:
            limit = format_bytes(s.capacity)
            text += (f": {limit} usable ({format_bytes(s.kept)} kept free)" if s.kept > 0 else f": {limit}")
            text += "" if drawn else " (limit above the chart's top)"
        texts.append(_wrapped(text))
    return texts


def _legend(series: list[Series], top: float) -> list[str]:
    """One entry per device under the plot: its line (solid), its limit (dashed) and the limit in words, wrapped
    to the chart's width. Labels in the plot collided with the lines and each other (review17b #7: two limits 2 GiB
    apart, a label on the RAM line)."""
    out = []
    y = top
    for i, (rows, drawn) in enumerate(zip(_legend_texts(series), drawn_limits(series))):
        color = COLORS[i % len(COLORS)]
        mid = y - LEGEND_FONT * 0.35
        x = 8
        out.append(f'<line x1="{x}" x2="{x + LEGEND_SWATCH}" y1="{mid:.1f}" y2="{mid:.1f}" stroke="{color}" '
                   'stroke-width="2.5"/>')
        x += LEGEND_SWATCH + 4
        if drawn:
            out.append(f'<line x1="{x}" x2="{x + LEGEND_SWATCH}" y1="{mid:.1f}" y2="{mid:.1f}" stroke="{color}" '
                       'stroke-dasharray="6 4"/>')
        for row in rows:
            out.append(f'<text x="{LEGEND_TEXT_X}" y="{y:.1f}" fill="{color}" font-size="{LEGEND_FONT}">'
                       f'{escape(row)}</text>')
            y += LEGEND_ROW
    return out


def memory_chart(series: list[Series], *, marked_ctx: int | None, asked_ctx: int | None, title: str) -> Markup:
    """Memory on each device against context (log₂ x), each device's limit dashed in its colour, the largest
    context that fits as a vertical line labelled above the plot, and a legend under it (no label over a line)."""
    xs = [x for s in series for x, _ in s.points]
    if not xs:
        return Markup("")
    x0, x1 = math.log2(min(xs)), math.log2(max(xs))
    drawn = drawn_limits(series)
    ymax = max([y for s in series for _, y in s.points]
               + [s.capacity or 0 for s, d in zip(series, drawn) if d]) * 1.08 or 1
    top = MEMORY_TOP
    pw, ph = W - LEFT - RIGHT, H - top - BOTTOM
    legend_top = H + FONT + 4
    height = int(legend_top + (sum(len(rows) for rows in _legend_texts(series)) - 1) * LEGEND_ROW + 8)

    def px(x: float) -> float:
        return LEFT + pw * (math.log2(x) - x0) / max(1e-9, x1 - x0)

    def py(y: float) -> float:
        return top + ph * (1 - y / ymax)

    out = [(f'<svg class="chart" viewBox="0 0 {W} {height}" role="img" aria-labelledby="memchart-title" '
            f'font-size="{FONT}" xmlns="http://www.w3.org/2000/svg">'),
           f'<title id="memchart-title">{escape(title)}</title>']
    gib = 1024**3
    for t in _ticks(0, ymax / gib):
        y = py(t * gib)
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(format_bytes(t * gib))}</text>')
    ctx_ticks = sorted({p[0] for s in series for p in s.points})
    step = max(1, math.ceil(len(ctx_ticks) / 7))      # at most ~7 labels so they never run together
    shown = ctx_ticks[::step]
    for i, c in enumerate(shown):
        anchor = "end" if i == len(shown) - 1 and c == ctx_ticks[-1] else "start" if i == 0 else "middle"
        out.append(f'<text x="{px(c):.1f}" y="{H - BOTTOM + 18}" text-anchor="{anchor}">{_ctx_label(c)}</text>')
    out.append(f'<text x="{LEFT + pw / 2:.0f}" y="{H - 4}" text-anchor="middle" class="axis">context (tokens)</text>')
    for i, s in enumerate(series):
        color = COLORS[i % len(COLORS)]
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2.5"/>')
        if s.capacity and drawn[i]:
            y = py(s.capacity)
            out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="{color}" '
                       f'stroke-dasharray="6 4"/>')
    out += _legend(series, legend_top)
    above = top - 10        # the marker's label: in the top margin, where no line is drawn
    if not marked_ctx:
        out.append(f'<text x="{LEFT}" y="{above}" class="marker-label bad">no context fits</text>')
    else:
        x = px(min(max(marked_ctx, min(xs)), max(xs)))
        beyond = "≥ " if marked_ctx > max(xs) else ""
        anchor, dx = ("end", 0) if x > LEFT + pw / 2 else ("start", 0)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{H - BOTTOM}" class="marker"/>'
                   f'<text x="{x + dx:.1f}" y="{above}" text-anchor="{anchor}" class="marker-label">'
                   f'largest context {beyond}{marked_ctx:,}</text>')
    if asked_ctx and min(xs) <= asked_ctx <= max(xs):
        out.append(f'<line x1="{px(asked_ctx):.1f}" x2="{px(asked_ctx):.1f}" y1="{top}" y2="{H - BOTTOM}" '
                   f'class="asked"/>')
    out.append("</svg>")
    return Markup("".join(out))


def breakeven_chart(own_fixed_per_year: float, own_per_hour: float, rent_per_hour: float,
                    breakeven_hours: float | None, title: str) -> Markup:
    """Cost per year against hours used per day (0–24): owning is the purchase spread over the years plus
    electricity per hour; renting is the hourly rate. They cross at the break-even hours."""
    hours = [0, 24]

    def own(h: float) -> float:
        return own_fixed_per_year + own_per_hour * h * 365

    def rent(h: float) -> float:
        return rent_per_hour * h * 365

    ymax = max(own(24), rent(24)) * 1.08 or 1
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(h: float) -> float:
        return LEFT + pw * h / 24

    def py(y: float) -> float:
        return TOP + ph * (1 - y / ymax)

    out = [(f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-labelledby="costchart-title" '
            f'font-size="{FONT}" xmlns="http://www.w3.org/2000/svg">'),
           f'<title id="costchart-title">{escape(title)}</title>']
    for t in _ticks(0, ymax):
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{py(t):.1f}" y2="{py(t):.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{py(t) + 4:.1f}" text-anchor="end">${t:,.0f}</text>')
    for h in (0, 4, 8, 12, 16, 20, 24):
        anchor = "start" if h == 0 else "end" if h == 24 else "middle"
        out.append(f'<text x="{px(h):.1f}" y="{H - BOTTOM + 18}" text-anchor="{anchor}">{h} h</text>')
    out.append(f'<text x="{LEFT + pw / 2:.0f}" y="{H - 4}" text-anchor="middle" class="axis">hours used per day'
               '</text>')
    for fn, color in ((own, COLORS[0]), (rent, COLORS[1])):
        pts = " ".join(f"{px(h):.1f},{py(fn(h)):.1f}" for h in hours)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2.5"/>')
    ly = _spread([py(own(24)) - 6, py(rent(24)) - 6], FONT + 2, TOP + FONT, H - BOTTOM - 4)
    out.append(f'<text x="{W - RIGHT - 4}" y="{ly[0]:.1f}" text-anchor="end" fill="{COLORS[0]}" class="halo">own'
               f' ${own(24):,.0f}/yr</text>')
    out.append(f'<text x="{W - RIGHT - 4}" y="{ly[1]:.1f}" text-anchor="end" fill="{COLORS[1]}" class="halo">rent'
               f' ${rent(24):,.0f}/yr</text>')
    if breakeven_hours is not None and 0 < breakeven_hours <= 24:
        x, y = px(breakeven_hours), py(rent(breakeven_hours))
        anchor, dx = ("end", -6) if x > LEFT + pw / 2 else ("start", 6)
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" class="marker-dot"/>'
                   f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" class="marker"/>'
                   f'<text x="{x + dx:.1f}" y="{TOP + FONT + 2}" text-anchor="{anchor}" class="marker-label halo">'
                   f'break-even {breakeven_hours:g} h/day</text>')
    out.append("</svg>")
    return Markup("".join(out))
