"""`runlocal models --fits` as a table predicts the speed of the rows it shows only: the same table as from the
whole list, whatever --top asks."""

from __future__ import annotations

import pytest

from runlocal import fits_here
from runlocal.render.choose_text import render_fits


@pytest.mark.parametrize("gpu,top", [("rtx-4090", 25), ("2x3090", 40), ("rtx-3060", 0), ("h100", 500)])
def test_the_table_is_the_one_the_whole_list_gives(gpu, top):
    whole = fits_here.fits_here(gpu, ctx=8192)
    shown = fits_here.fits_here(gpu, ctx=8192, speed_rows=top)
    assert render_fits(shown, top=top) == render_fits(whole, top=top)
    assert [r["alias"] for r in shown["models"]] == [r["alias"] for r in whole["models"]]
    assert all("decode_tokens_per_s" not in r for r in shown["models"][top:])


def test_the_header_says_one_devices_memory_once():
    """review18 #13: "NVIDIA GeForce RTX 3060 12GB (11.8 GiB) · 11.8 GiB" said the figure twice; the sum is for
    several devices (2 × 11.8 GiB = 23.6 GiB, added here by hand)."""
    from runlocal.render.choose_text import render_fits

    one = {"name": "NVIDIA GeForce RTX 3060 12GB", "kind": "gpu", "capacity_bytes": 12_670_992_384}
    doc = {"devices": [one], "capacity_bytes": one["capacity_bytes"], "ctx": 8192, "runtime": "llama.cpp",
           "models": [], "notes": []}
    head = render_fits(doc).splitlines()[0]
    assert head == "NVIDIA GeForce RTX 3060 12GB (11.8 GiB) · ctx 8,192 · llama.cpp"
    two = {**doc, "devices": [one, one], "capacity_bytes": 2 * one["capacity_bytes"]}
    assert " · 23.6 GiB in all · ctx 8,192" in " ".join(render_fits(two).split())


def _row_lines(text: str, n: int) -> list[str]:
    rows = [line for line in text.splitlines() if line[:1].isdigit()]
    assert len(rows) == n                       # one line a row: no name wrapped onto a second line
    return rows


def test_the_model_column_is_sized_to_the_names(monkeypatch):
    """mends19b: the 24-wide model column wrapped 'deepseek-r1-distill-qwen-32b (+2)' (33 characters) over two lines.
    With room (120 columns) every name is whole; at 80 a name that cannot fit loses its end to '…', keeps its '(+N)',
    the table says so, and --json keeps the whole name."""
    doc = fits_here.fits_here("rtx-4090", ram="64G", ctx=8192, speed_rows=40)
    shown = doc["models"][:40]
    longest = max(shown, key=lambda r: len(r["alias"]) + (5 if r.get("alike") else 0))
    monkeypatch.setenv("COLUMNS", "120")
    for line, r in zip(_row_lines(render_fits(doc, top=40), 40), shown):
        assert f" {r['alias']}" + (f" (+{len(r['alike'])})" if r.get("alike") else "") + "  " in line
    assert "cut to the terminal's width" not in render_fits(doc, top=40)
    monkeypatch.setenv("COLUMNS", "80")
    text = render_fits(doc, top=40)
    rows = _row_lines(text, 40)
    assert all(len(line) <= 80 for line in rows)
    cut = [(line, r) for line, r in zip(rows, shown) if f" {r['alias']}" not in line]
    assert cut and longest in [r for _, r in cut]
    for line, r in cut:                         # a prefix of the name, the ellipsis, its (+N)
        stem, ellipsis, tail = line.split(None, 1)[1].partition("…")
        assert ellipsis and r["alias"].startswith(stem) and len(stem) >= 10
        assert tail.startswith(f" (+{len(r['alike'])})  " if r.get("alike") else "  ")
    assert f"… {len(cut)} name{'s' if len(cut) > 1 else ''} cut to the terminal's width: whole in --json" in text
