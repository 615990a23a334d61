"""The check page's "this answer as JSON" link carries the page's whole request, and the page reads the request
contract's names (review19 #1, #6). Before, the link kept only model, runtime, gpu and ctx: a vLLM page with GPTQ
weights, an fp8 KV cache and 8 sequences said "Fits, 241.2 tok/s" and its link answered "does_not_fit, BF16, 133.3";
and /?…&kv_cache=fp8 planned an f16 cache without a word. The independent answer is the CLI's own `check --json`
for the same flags: page, link and CLI must agree."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.asking import offline_process_env

pytest.importorskip("jinja2")
SRC = str(Path(__file__).resolve().parents[2] / "src")
# seven settings away from their defaults (runtime, devices, ctx, parallel, weights, KV cache, RAM, memory share,
# prompt), in the page's own names
PAGE = {"model": "qwen3-30b-a3b", "runtime": "vllm", "gpu": "rtx-3090", "n": "2", "ctx": "16384", "parallel": "8",
        "quant": "gptq", "kv": "fp8", "ram": "64G", "budget": "0.85", "prompt": "2048"}
CLI = ["qwen3-30b-a3b", "-r", "vllm", "--gpu", "2x3090", "--ctx", "16384", "--parallel", "8", "-q", "gptq",
       "--kv-cache", "fp8", "--ram", "64G", "--gpu-memory-utilization", "0.85", "--prompt-tokens", "2048"]
BADGE = {"fits": "Fits", "tight": "Tight", "does_not_fit": "Does not fit"}


@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from runlocal.testing.browser import served_app

    return TestClient(served_app(), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def cli_answer(tmp_path_factory):
    env = offline_process_env(tmp_path_factory.mktemp("home"), SRC)
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", *CLI, "--json"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _page_figures(text: str) -> dict:
    text = html.unescape(text)
    head = re.search(r'<span class="badge (\w+)">[^<]*</span>\s*<span>([^<]*)</span>', text)
    decode = re.search(r"<dt>Decode</dt><dd>([\d,.]+) tok/s", text)
    assert head and decode, "no verdict line or decode figure"
    return {"verdict": head.group(1), "quant": head.group(2).split(" · ")[2].strip(),
            "decode": float(decode.group(1).replace(",", ""))}


def _json_link(text: str) -> str:
    link = re.search(r'href="(/api/v1/check\?[^"]*)">this answer as JSON', text)
    assert link, "no JSON link"
    return html.unescape(link.group(1))


def test_the_json_link_asks_what_the_page_asked(client, cli_answer):
    page = client.get("/", params=PAGE)
    assert page.status_code == 200
    shown = _page_figures(page.text)
    link = _json_link(page.text)
    for name in ("kv_cache=fp8", "quant=gptq", "parallel=8", "ram=64G", "gpu_memory_utilization=0.85",
                 "prompt_tokens=2048", "gpu=2xrtx-3090", "ctx=16384", "runtime=vllm"):
        assert name in link, (name, link)
    linked = client.get(link).json()
    for answer in (linked, cli_answer):
        assert answer["verdict"] == shown["verdict"]
        assert answer["settings"]["quant"] == shown["quant"] or answer["weights"]["quant"] == shown["quant"]
        assert round(answer["speed"]["decode_tokens_per_s"], 1) == shown["decode"]
    assert linked["verdict"] == cli_answer["verdict"]
    assert linked["speed"]["decode_tokens_per_s"] == cli_answer["speed"]["decode_tokens_per_s"]


def test_the_page_reads_the_api_names(client):
    """kv_cache= / gpu_memory_utilization= / prompt_tokens= plan what kv= / budget= / prompt= plan."""
    api_names = {**{k: v for k, v in PAGE.items() if k not in ("kv", "budget", "prompt", "n")}, "gpu": "2xrtx-3090",
                 "kv_cache": "fp8", "gpu_memory_utilization": "0.85", "prompt_tokens": "2048"}
    ours, theirs = client.get("/", params=PAGE), client.get("/", params=api_names)
    assert _page_figures(theirs.text) == _page_figures(ours.text)
    assert _json_link(theirs.text) == _json_link(ours.text)
    assert 'class="notice"' not in theirs.text.split('id="result"')[1].split("<h2")[0]   # nothing "Adjusted"


def test_a_field_the_page_lacks_is_said_not_dropped(client):
    page = html.unescape(client.get("/", params={**PAGE, "flash_attn": "off", "kv_cach": "fp8"}).text)
    notice = re.search(r'<div class="notice" role="status">(.*?)</div>', page, re.S)
    assert notice, "no Adjusted notice"
    assert "flash_attn=off" in notice.group(1) and "--flash-attn" in notice.group(1)
    assert "kv_cach: not a field" in notice.group(1)


def test_both_names_for_one_field_with_two_values_is_an_error(client):
    page = client.get("/", params={**PAGE, "kv_cache": "auto"})
    assert page.status_code == 422 and "kv_cache: given with kv" in html.unescape(page.text)


def test_compare_takes_the_api_devices_and_links_its_json(client):
    page = client.get("/compare", params={"devices": "rtx-4090,2x3090", "model": "llama-3.1-8b", "ctx": "8192"})
    assert page.status_code == 200
    link = re.search(r'href="(/api/v1/compare\?[^"]*)">this answer as JSON', page.text)
    assert link
    rows = client.get(html.unescape(link.group(1))).json()
    assert len(rows) == 2 and rows[0]["spec"] == "rtx-4090" and "rtx-3090" in rows[1]["spec"]
    by_d = client.get("/compare", params=[("d", "rtx-4090"), ("d", "2x3090"), ("model", "llama-3.1-8b"),
                                          ("ctx", "8192")])
    strip = re.compile(r'<p class="links">.*?</p>', re.S)
    assert strip.sub("", by_d.text) == strip.sub("", page.text)


def test_the_query_writer_round_trips_through_the_api(client):
    """request.query_pairs over switches, lists, floats and tokens: GET /api/v1/check of the query it writes answers
    what POST /api/v1/check of the same fields answers (the API's own reading is the independent one)."""
    from urllib.parse import urlencode

    from runlocal.check import CheckRequest
    from runlocal.request import query_pairs

    fields = dict(model="qwen3-30b-a3b", gpu="rtx-4090", ram="64G", ctx=16384, quant="Q4_K_M", kv_cache="q8_0",
                  parallel=2, flash_attn="on", no_mmap=True, override_tensor=(r"blk\.(0|1)\.ffn_.*_exps=CPU",),
                  prompt_tokens=1024)
    pairs = query_pairs(CheckRequest(**fields))
    assert {k for k, _ in pairs} == set(fields)
    got = client.get("/api/v1/check?" + urlencode(pairs))
    posted = client.post("/api/v1/check", json={**fields, "override_tensor": list(fields["override_tensor"])})
    assert got.status_code == posted.status_code == 200, got.text[:300]
    assert got.json() == posted.json()


@pytest.mark.parametrize("path", ["/best?model=llama-3.1-8b", "/cost?model=llama-3.1-8b&gpu=rtx-4090",
                                  "/compare?devices=rtx-4090&model=llama-3.1-8b"])
def test_best_cost_and_compare_name_a_field_they_do_not_read(client, path):
    page = html.unescape(client.get(path + "&kv_cach=fp8").text)
    assert "<li>kv_cach: not a field of this page — ignored</li>" in page
    assert "not a field of this page" not in html.unescape(client.get(path).text)


# fixes19a's leftover: the directory pages read a few fields each (their forms: models q; hardware q, kind, vendor;
# errors q; benchmarks device, model, runtime) and a detail page none; a name they do not read — a field of another
# page, as a link copied from the check page carries — is named in the same 'Ignored' notice, not dropped in silence
@pytest.mark.parametrize("path, read", [("/models?q=qwen", "q"), ("/hardware?vendor=nvidia&kind=desktop", "vendor"),
                                        ("/errors?q=Killed", "q"), ("/benchmarks?runtime=llama.cpp", "runtime"),
                                        ("/models/llama-3.1-8b?", None), ("/hardware/rtx-4090?", None),
                                        ("/errors/cuda-oom-load?", None)])
def test_directory_pages_name_a_field_they_do_not_read(client, path, read):
    page = html.unescape(client.get(path + "&gpu=rtx-4090").text)
    assert "<li>gpu: not a field of this page — ignored</li>" in page
    clean = html.unescape(client.get(path).text)
    assert "not a field of this page" not in clean
