"""The check page's form offers what the answer is about (review17b #3, review16b #11): the Weights menu's default
entry names the model's real default file — gpt-oss is published in MXFP4 only (ggml-org/gpt-oss-120b-GGUF and
Ollama's gpt-oss tags hold MXFP4 weights; llama.cpp names the file type MXFP4_MOE), not the Q4_K_M most models
get — and resubmitting the form as shown asks for the same file."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def client():
    from runlocal.testing.browser import served_app

    return TestClient(served_app(), base_url="http://127.0.0.1")


def _menu(text: str) -> list[tuple[str, bool, str]]:
    select = re.search(r'<select id="quant" name="quant">(.*?)</select>', text, re.S)
    assert select, "no Weights menu"
    return [(v, bool(sel), html.unescape(label))
            for v, sel, label in re.findall(r'<option value="([^"]*)"( selected)?>([^<]*)</option>', select.group(1))]


def _selected(menu):
    chosen = [o for o in menu if o[1]]
    assert len(chosen) == 1, menu
    return chosen[0]


@pytest.mark.parametrize(("model", "published"), [("gpt-oss-120b", "MXFP4_MOE"), ("gpt-oss-20b", "MXFP4_MOE"),
                                                  ("qwen3.6-27b", "Q4_K_M")])
def test_default_entry_names_the_file_the_answer_is_about(client, model, published):
    page = client.get(f"/?model={model}&gpu=rtx-5090&ctx=32768&ram=64G")
    assert page.status_code == 200
    value, _, label = _selected(_menu(page.text))
    assert value == "" and label.startswith(f"{published} ")
    assert f"· {published} ·" in html.unescape(page.text)            # the headline's quant: the same file
    again = client.get(f"/?model={model}&gpu=rtx-5090&ctx=32768&ram=64G&quant={value}")   # the form resubmitted
    assert f"· {published} ·" in html.unescape(again.text)
    assert "Q4_K_M (default download)" not in page.text


def test_an_asked_quant_stays_selected_and_the_default_keeps_its_name(client):
    menu = _menu(client.get("/?model=gpt-oss-20b&gpu=rtx-4090&quant=Q8_0").text)
    assert _selected(menu)[0] == "Q8_0"
    assert menu[0][0] == "" and menu[0][2].startswith("MXFP4_MOE ")
