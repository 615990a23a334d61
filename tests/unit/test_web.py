"""The site's pages in-process (no browser): bad input is an error page naming the field with no verdict,
options a runtime lacks are dropped and said, the charts keep their labels inside the box, nothing is loaded
from outside the server."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from fastapi.testclient import TestClient

pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from runlocal.api.app import create_app

    app = create_app(store_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'b.sqlite3'}", admin_token="x")
    return TestClient(app)


def result_of(html: str) -> str:
    return html.split("data-result", 1)[1].split("</section>", 1)[0]


@pytest.mark.parametrize("query, field", [
    ({"model": "no-such-model-xyz", "gpu": "rtx-4090"}, "no-such-model-xyz"),
    ({"model": "llama-3.1-8b", "gpu": "rtx-9999-imaginary"}, "rtx-9999-imaginary"),
    ({"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": "lots"}, "ctx"),
    ({"model": "llama-3.1-8b", "gpu": "rtx-4090", "n": "0"}, "n (device count)"),
    ({"model": "llama-3.1-8b", "gpu": "", "vram": ""}, "gpu"),
    ({"model": "llama-3.1-8b", "gpu": "rtx-4090", "runtime": "tensorrt"}, "tensorrt"),
])
def test_bad_input_is_an_error_page_without_a_verdict(client, query, field):
    r = client.get("/", params=query)
    assert r.status_code == 422
    result = result_of(r.text)
    assert 'role="alert"' in result and field in result
    assert 'class="badge' not in result           # no verdict, stale or otherwise


def test_options_the_runtime_lacks_are_dropped_and_said(client):
    r = client.get("/", params={"model": "llama-3.1-8b", "gpu": "rtx-4090", "runtime": "vllm", "quant": "Q4_K_M",
                                "kv": "q4_0", "ngl": "20"})
    assert r.status_code == 200
    notice = re.search(r'<div class="notice".*?</div>', r.text, re.DOTALL).group(0)
    assert "Q4_K_M" in notice and "q4_0" in notice and "GPU layers" in notice
    result = result_of(r.text)
    assert "vllm serve" in result and ".gguf" not in result          # the command serves what was planned
    assert 'name="ngl"' not in r.text                                 # llama.cpp's -ngl is not offered to vLLM


def test_two_cards_are_counted_and_the_query_reproduces_the_page(client):
    query = {"model": "llama-3.1-8b", "gpu": "rtx-3090", "n": "2", "ctx": "32768"}
    r = client.get("/", params=query)
    assert "2 × NVIDIA GeForce RTX 3090" in r.text
    # Llama 3.1 8B: 32 layers × (K + V) × 8 KV heads × 128 × 2 bytes = 128 KiB per token at f16 (GQA, not 32 heads)
    assert re.search(r"<dt>KV cache per token</dt><dd>128 KiB</dd>", r.text)
    assert 'name="n" type="number" min="1" max="64" value="2"' in r.text   # the form shows the state it planned
    assert client.get("/", params=query).text == r.text


def test_chart_labels_stay_inside_the_box_above_100_gib(client):
    # a 70B at bf16 on one H200 (141 GB): memory and capacity above 100 GiB, labels must read whole
    r = client.get("/", params={"model": "llama-3.1-70b", "gpu": "h200-sxm", "n": "1", "runtime": "vllm",
                                "ctx": "32768"})
    assert r.status_code == 200
    svg = re.search(r"<svg class=\"chart\".*?</svg>", r.text, re.DOTALL).group(0)
    root = ET.fromstring(svg)
    width = float(root.get("viewBox").split()[2])
    texts = list(root.iter("{http://www.w3.org/2000/svg}text"))
    y_labels = [t.text for t in texts if t.get("text-anchor") == "end" and t.text and t.text.endswith("GiB")]
    assert any(re.fullmatch(r"\d{3,} GiB", s) for s in y_labels), y_labels    # "600 GiB", not "00 GiB"
    for t in texts:
        x, anchor = float(t.get("x")), t.get("text-anchor", "start")
        assert 0 <= x <= width, (t.text, x)
        if anchor == "start":                     # a left-anchored label needs room to its right
            assert x + 7 * len(t.text or "") <= width + 1, t.text


def test_no_page_loads_anything_from_outside(client):
    for path in ("/", "/best", "/errors", "/docs", "/redoc", "/api", "/methodology"):
        html = client.get(path).text
        outside = re.findall(r'(?:src|href)="(https?://[^"]+)"', html)
        assert not [u for u in outside if "127.0.0.1" not in u and not u.startswith("http://mozilla")], (path, outside)
    assert "cdn" not in client.get("/docs").text.lower()
    assert client.get("/static/vendor/swagger-ui-bundle.js").status_code == 200
    for bad in ("/static/..%2Fsite.py", "/static/site.py", "/static/vendor/..%2F..%2Fcore.py"):
        assert client.get(bad).status_code == 404


def test_api_page_lists_the_endpoints_from_openapi(client):
    html = client.get("/api").text
    for path in client.get("/openapi.json").json()["paths"]:
        assert f"<code>{path}</code>" in html


def test_submit_goes_through_the_api_and_its_validation(client):
    ok = client.post("/benchmarks/submit", data={"device": "rtx-4090", "runtime": "llama.cpp", "model": "llama-3.1-8b",
                                                 "decode_tokens_per_s": "101.5"})
    assert ok.status_code == 201 and "Submitted" in ok.text
    assert any(b["decode_tokens_per_s"] == 101.5 for b in client.get("/api/v1/benchmarks").json())
    bad = client.post("/benchmarks/submit", data={"device": "rtx-4090", "runtime": "llama.cpp", "model": "x",
                                                  "decode_tokens_per_s": "fast"})
    assert bad.status_code == 422 and "decode_tokens_per_s" in bad.text


def test_diagnosis_of_a_pasted_log(client):
    r = client.post("/errors/diagnose", data={"text": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                                                      "2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which "
                                                      "1.19 GiB is free."})
    assert r.status_code == 200
    result = result_of(r.text)
    assert "/errors/cuda-oom-load" in result and "free_bytes" in result
    assert client.post("/errors/diagnose", data={"text": ""}).status_code == 422


def test_unknown_pages_are_404_pages(client):
    for path in ("/errors/nope", "/models/nope", "/hardware/nope", "/guides/nope"):
        r = client.get(path)
        assert r.status_code == 404 and "Not found" in r.text


def test_compare_takes_a_vram_figure_beside_catalog_cards(client):
    r = client.get("/compare", params={"d": ["rtx-4090", "2x3090", "20G"], "model": "llama-3.1-8b"})
    assert r.status_code == 200
    result = result_of(r.text)
    assert "2 × NVIDIA GeForce RTX 3090" in result and "Custom GPU, 20G" in result
    assert result.count('class="badge') == 3
