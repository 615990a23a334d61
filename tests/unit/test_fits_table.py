"""`runlocal models --fits` as a table predicts the speed of the rows it shows only: the same table as from the
whole list, whatever --top asks."""

from __future__ import annotations

import pytest

from runlocal import choose
from runlocal.render.choose_text import render_fits


@pytest.mark.parametrize("gpu,top", [("rtx-4090", 25), ("2x3090", 40), ("rtx-3060", 0), ("h100", 500)])
def test_the_table_is_the_one_the_whole_list_gives(gpu, top):
    whole = choose.fits_here(gpu, ctx=8192)
    shown = choose.fits_here(gpu, ctx=8192, speed_rows=top)
    assert render_fits(shown, top=top) == render_fits(whole, top=top)
    assert [r["alias"] for r in shown["models"]] == [r["alias"] for r in whole["models"]]
    assert all("decode_tokens_per_s" not in r for r in shown["models"][top:])
