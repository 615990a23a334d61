"""The memory chart scales to the lines and the limits near them (review21 #12): on the check page for qwen3-8b,
RTX 4060, 32K the host's 32 GiB RAM limit stretched the y-axis to 30 GiB and squashed the GPU's 5-6.6 GiB line into
the bottom fifth. The plan's own figures (`runlocal check qwen3-8b --gpu rtx-4060 --ctx 32k`: the GPU holds 6.41
of 7.63 GiB, 6.63 GiB usable with 1 GiB kept free; CPU RAM 3.63 of 32 GiB) put the GPU's limit within the plot and
the RAM's limit far above it."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("jinja2")


def test_a_far_limit_is_stated_not_drawn_and_the_gpu_fills_the_plot():
    from runlocal.web.charts import LEGEND_FONT, MEMORY_TOP, H, Series, memory_chart

    gib = 1024**3
    gpu = Series("GPU", ((512, 5.09 * gib), (8192, 6.15 * gib), (32768, 6.41 * gib)), 6.63 * gib, kept=1 * gib)
    ram = Series("CPU RAM", ((512, 0.34 * gib), (8192, 0.35 * gib), (32768, 3.63 * gib)), 32 * gib)
    svg = str(memory_chart([gpu, ram], marked_ctx=11520, asked_ctx=32768, title="t"))
    ticks = re.findall(r'text-anchor="end">([\d.]+) (B|GiB)</text>', svg)
    assert max(float(v) for v, _ in ticks) < 8            # the axis ends near the GPU's 6.63 GiB, not at 30 GiB
    # the GPU's limit is drawn; the RAM's is said in the legend, at the legend's own (smaller) size
    limits = re.findall(r'<line x1="74" x2="468" y1="([\d.]+)" y2="[\d.]+" stroke="#[0-9a-f]+" stroke-dasharray', svg)
    assert len(limits) == 1 and MEMORY_TOP <= float(limits[0]) < H / 2
    assert f'font-size="{LEGEND_FONT}">CPU RAM: 32 GiB (limit above the chart&#39;s top)' in svg
    assert LEGEND_FONT < 14


def test_a_cpu_only_chart_keeps_its_ram_limit():
    from runlocal.web.charts import Series, memory_chart

    gib = 1024**3
    ram = Series("CPU RAM", ((512, 5 * gib), (32768, 9 * gib)), 32 * gib)
    svg = str(memory_chart([ram], marked_ctx=32768, asked_ctx=None, title="t"))
    assert "limit above" not in svg and svg.count('stroke-dasharray="6 4"') == 2     # the line and its swatch
