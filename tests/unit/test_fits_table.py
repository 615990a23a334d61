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
