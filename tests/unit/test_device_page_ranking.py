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
   2  or  Q4_0    :  4.34G, +0.4685 ppl @ Llama-3-8B
   3  or  Q4_1    :  4.78G, +0.4511 ppl @ Llama-3-8B
   8  or  Q5_0    :  5.21G, +0.1316 ppl @ Llama-3-8B
   9  or  Q5_1    :  5.65G, +0.1062 ppl @ Llama-3-8B
  21  or  Q2_K_S  :  2.96G, +3.1836 ppl @ Llama-3-8B
  11  or  Q3_K_S  :  3.41G, +1.6321 ppl @ Llama-3-8B
  13  or  Q3_K_L  :  4.03G, +0.5562 ppl @ Llama-3-8B
  14  or  Q4_K_S  :  4.37G, +0.2689 ppl @ Llama-3-8B
  16  or  Q5_K_S  :  5.21G, +0.1049 ppl @ Llama-3-8B
   1  or  F16     : 14.00G, +0.0020 ppl @ Mistral-7B
  32  or  BF16    : 14.00G, -0.0050 ppl @ Mistral-7B
"""


def test_the_perplexity_table_is_llama_quantizes():
    listed = {m.group(1): float(m.group(2)) for m in re.finditer(r"or\s+(\S+)\s*:.*?([+-][\d.]+) ppl", LISTED)}
    assert QUANTIZE_PPL == listed and CHOSEN_PPL == listed["Q4_K_M"]
    # the ladder fixes offer, best first, adds perplexity at each step (IQ4_XS has no figure: it ranks below Q4_K_M)
    ranked = [q for q in GGUF_LADDER if q in listed]
    assert [listed[q] for q in ranked] == sorted(listed[q] for q in ranked)


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


def test_a_type_without_a_figure_is_ranked_by_its_bytes_and_floats_or_the_published_format_are_not_degraded():
    # review19b finding 9: every type missing from the table was marked "smaller than Q4_K_M". llama-quantize lists
    # F16 at +0.0020 and BF16 at -0.0050 (Mistral-7B), Q5_K_S at +0.1049, Q4_0 at +0.4685; IQ4_XS only as 4.25 bpw
    # (ggml's 136 B per 256 weights) against Q4_K's 4.5 (144 B per 256): smaller. gpt-oss is published only in
    # MXFP4 (MXFP4_MOE: its GGUF and Ollama tag), which is not a degradation of anything.
    from runlocal.fits_here import below_chosen

    def degraded(model, quant):
        return below_chosen(quant, model)

    llama = lookup("llama-3.1-8b")
    assert [degraded(llama, q) for q in ("F16", "BF16", "Q5_K_S", "Q8_0")] == [False] * 4
    assert [degraded(llama, q) for q in ("Q4_0", "Q3_K_S", "IQ4_XS", "IQ3_M")] == [True] * 4
    assert not degraded(lookup("gpt-oss-20b"), "MXFP4_MOE")
