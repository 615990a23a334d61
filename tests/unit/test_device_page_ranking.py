"""review18: a device page ranked the largest models first whatever their format, so a 4090's "What runs whole at
8,192 tokens" opened with jamba-mini-1.5 and mixtral-8x7b at Q2_K — which llama.cpp's own quantize table lists at
+3.5199 perplexity on Llama-3-8B against Q4_K_M's +0.1754 (20×). A page now lists first the models that run whole at
Q4_K_M or a more accurate type, largest first, then those that fit only at a smaller type, marked."""

from __future__ import annotations

import re

from runlocal.fits_here import CHOSEN_PPL, QUANTIZE_PPL
from runlocal.model.catalog import lookup
from runlocal.runtimes.base import GGUF_LADDER
from runlocal.web.directory import device_fits

# `llama-quantize --help`, as llama.cpp prints it (tools/quantize/quantize.cpp QUANT_OPTIONS), the lines of the
# types a device page offers
LISTED = """
  10  or  Q2_K    :  2.96G, +3.5199 ppl @ Llama-3-8B
  12  or  Q3_K_M  :  3.74G, +0.6569 ppl @ Llama-3-8B
  30  or  IQ4_XS  :  4.25 bpw non-linear quantization
  15  or  Q4_K_M  :  4.58G, +0.1754 ppl @ Llama-3-8B
  17  or  Q5_K_M  :  5.33G, +0.0569 ppl @ Llama-3-8B
  18  or  Q6_K    :  6.14G, +0.0217 ppl @ Llama-3-8B
   7  or  Q8_0    :  7.96G, +0.0026 ppl @ Llama-3-8B
"""


def test_the_perplexity_table_is_llama_quantizes():
    listed = {m.group(1): float(m.group(2)) for m in re.finditer(r"or\s+(\S+)\s*:.*?\+([\d.]+) ppl", LISTED)}
    assert QUANTIZE_PPL == listed and CHOSEN_PPL == listed["Q4_K_M"]
    # the ladder fixes offer, best first, adds perplexity at each step (IQ4_XS has no figure: it ranks below Q4_K_M)
    ranked = [q for q in GGUF_LADDER if q in listed]
    assert [listed[q] for q in ranked] == sorted(listed.values())


def test_a_4090_lists_q4_k_m_or_better_first_not_q2_k():
    """Before: rows 1-5 at 8K were jamba-mini-1.5, jamba-v0.1, mixtral-8x7b, mixtral-8x7b-base, xlam-8x7b-r, all Q2_K."""
    for ctx, rows in device_fits("rtx-4090").items():
        assert len(rows) == 12 and not any(r["degraded"] for r in rows), ctx
        assert all(QUANTIZE_PPL[r["quant"]] <= CHOSEN_PPL for r in rows), ctx
        sizes = [lookup(r["alias"]).params for r in rows]
        assert sizes == sorted(sizes, reverse=True), ctx
        assert rows[0]["alias"] not in ("jamba-mini-1.5", "mixtral-8x7b")


def test_models_that_fit_only_at_a_smaller_type_come_after_and_are_marked(tmp_path):
    """A 4 GB Jetson at 32K: six models run whole at Q4_K_M or better; two more only at Q3_K_M / Q2_K, listed after
    them (each larger than every row above it: they lead a largest-first list) and marked on the page."""
    rows = device_fits("jetson-orin-nano-4gb")[32768]
    kinds = [r["degraded"] for r in rows]
    assert True in kinds and kinds == sorted(kinds)            # every good row first
    good = [r for r in rows if not r["degraded"]]
    low = [r for r in rows if r["degraded"]]
    assert all(QUANTIZE_PPL.get(r["quant"], 1.0) > CHOSEN_PPL for r in low)
    assert min(lookup(r["alias"]).params for r in low) > max(lookup(r["alias"]).params for r in good)

    from fastapi.testclient import TestClient

    from runlocal.testing.browser import served_app

    app = served_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="x")
    html = TestClient(app, base_url="http://127.0.0.1").get("/hardware/jetson-orin-nano-4gb").text
    table = html.split("What runs whole at 32,768 tokens", 1)[1].split("</table>", 1)[0]
    assert table.count("smaller than Q4_K_M: fits only so") == len(low)


def test_models_fits_ranks_as_the_device_page_does():
    """mends19's leftover: `runlocal models --fits --gpu rtx-4090` opened with jamba-mini-1.5 (+1) at Q2_K (17.4 GiB
    of weights, the largest that fits) above every Q4_K_M row. The same rule as the page (fits_here.below_chosen, the
    perplexity table above): every row at Q4_K_M or better first, then the smaller types, starred in the text."""
    from runlocal.fits_here import fits_here
    from runlocal.render.choose_text import render_fits

    doc = fits_here("rtx-4090", ram="64G", ctx=8192, speed_rows=0)
    kinds = [r["degraded"] for r in doc["models"]]
    assert True in kinds and kinds == sorted(kinds)               # no Q4_K_M-or-better row after a smaller one
    assert all(r["degraded"] == (QUANTIZE_PPL.get(r["quant"], 1.0) > CHOSEN_PPL) for r in doc["models"])
    jamba = next(r for r in doc["models"] if r["alias"] == "jamba-mini-1.5")
    assert jamba["quant"] == "Q2_K" and jamba["degraded"] and jamba["rank"] > kinds.index(True)
    assert doc["models"][0]["quant"] in ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M")
    text = render_fits(doc, top=len(doc["models"]))
    assert re.search(r"jamba-mini-1\.5 \(\+1\)\s+Q2_K \*", text)
    assert "* smaller than Q4_K_M: fits only so" in text
    # within each group, "fits" before "tight", as before
    for low in (False, True):
        verdicts = [r["verdict"] for r in doc["models"] if r["degraded"] is low]
        assert verdicts == sorted(verdicts, key=lambda v: v != "fits")
