"""A model page for a model llama.cpp cannot load (site23's crawl of every internal link: /models/llama-3.2-11b-vision
linked "Best GPU for llama-3.2-11b-vision", which answered 422, and listed "Does not fit" on an 80 GB H100 for an
11B model). llama.cpp has no 'mllama' architecture (ggml-org/llama.cpp#14951), so the page says so instead of a
memory verdict, and its links plan with a runtime that loads it; a model llama.cpp loads keeps its table and links."""

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


def links(page) -> list[str]:
    block = re.search(r'<p class="links">(.*?)</p>', page.text, re.S)
    assert block, "no links paragraph"
    return [html.unescape(u) for u in re.findall(r'href="([^"]*)"', block.group(1))]


def test_a_model_llama_cpp_cannot_load_says_why_and_links_a_runtime_that_loads_it(client):
    page = client.get("/models/llama-3.2-11b-vision")
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert "llama.cpp cannot load this model" in text and "'mllama'" in text
    assert 'class="badge does_not_fit"' not in page.text          # no memory verdict for an architecture refusal
    best, check = links(page)
    assert best.startswith("/best?model=llama-3.2-11b-vision&runtime=") and "runtime=llama.cpp" not in best
    assert client.get(best).status_code == 200                      # it had been 422
    assert "runtime=" in check and client.get(check).status_code == 200
    assert client.get("/best?model=llama-3.2-11b-vision").status_code == 422    # llama.cpp, the default, refuses it


def test_a_model_llama_cpp_loads_keeps_its_table_and_plain_links(client):
    page = client.get("/models/llama-3.1-8b")
    assert page.status_code == 200 and "cannot load this model" not in page.text
    assert page.text.count('<th scope="row" data-label="Device">') == 11    # directory.REFERENCE_DEVICES' 11 devices
    assert links(page) == ["/best?model=llama-3.1-8b", "/?model=llama-3.1-8b&gpu=rtx-4090"]
