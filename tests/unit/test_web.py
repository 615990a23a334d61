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
    from runlocal.testing.browser import served_app

    app = served_app(store_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'b.sqlite3'}", admin_token="x")
    return TestClient(app, base_url="http://127.0.0.1")      # as `runlocal serve` builds it: Host check on


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
    # the paste states no phase (no load step, no request), so the answer says so and links that entry
    assert "/errors/cuda-oom-phase-unstated" in result and "free_bytes" in result
    assert client.get("/errors/cuda-oom-phase-unstated").status_code == 200
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


def best_rows_of(html: str) -> list[tuple[str, str]]:
    """(setup link, the row's text) of each ranked row of a /best page."""
    body = result_of(html).split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    from html import unescape

    return [(unescape(m.group(1)), re.sub(r"<[^>]+>", " ", m.group(0))) for m in
            re.finditer(r'<tr>.*?<a href="(/\?[^"]+)">.*?</tr>', body, re.S)]


def test_best_gpu_for_a_use_a_30b_at_32k_for_4_users(client):
    """"A 30B at 32K for 4 users" on vLLM: a size is taken as the catalog model nearest it (said on the page),
    and every setup ranked holds four 32K requests at once (checked with the full planner, not best's)."""
    from urllib.parse import parse_qs

    from runlocal.choose import device_targets
    from runlocal.hardware.catalog import find_device
    from runlocal.model.resolve import resolve_model
    from runlocal.plan import make_plan
    from runlocal.runtimes import Settings

    four = client.get("/best", params={"model": "30B", "ctx": "32768", "users": "4", "runtime": "vllm"})
    one = client.get("/best", params={"model": "30B", "ctx": "32768", "runtime": "vllm"})
    assert four.status_code == 200 and "nearest that size" in four.text and "for 4 users at once" in four.text
    rows_four, rows_one = best_rows_of(four.text), best_rows_of(one.text)
    assert rows_four and len(rows_four) <= len(rows_one)
    for link, _ in rows_four[:3]:
        q = {k: v[0] for k, v in parse_qs(link[2:]).items()}
        assert q["parallel"] == "4" and q["ctx"] == "32768"
        count, device = re.fullmatch(r"(?:(\d+)x)?(.+)", q["gpu"]).groups()    # check's --gpu: 2xrtx-3090
        plan = make_plan(resolve_model(q["model"]),
                         Settings(runtime="vllm", ctx=32768, quant=q["quant"], parallel=4, tp=int(q.get("tp", 1))),
                         device_targets(find_device(device), int(count or 1)), with_fixes=False)
        assert plan.verdict in ("fits", "tight") and plan.max_concurrency >= 4, (link, plan.max_concurrency)


def test_best_refuses_a_user_count_that_is_not_a_number(client):
    r = client.get("/best", params={"model": "llama-3.1-8b", "users": "many"})
    assert r.status_code == 422 and "users" in r.text and 'id="best-title"' not in r.text


def test_best_laptop_ranks_single_laptop_gpus_only(client):
    r = client.get("/best", params={"model": "llama-3.1-8b", "ctx": "32768", "form": "laptop"})
    assert r.status_code == 200
    html = result_of(r.text)
    names = re.findall(r'<a href="/\?[^"]+">([^<]+)</a>', html)
    assert names and all(n.endswith("Laptop GPU") for n in names), names   # a laptop has one GPU: no "2 ×"
    assert "NVIDIA GeForce RTX 4090 Laptop GPU" in names
    guide = client.get("/guides/best-laptop")
    assert guide.status_code == 200 and "RTX 5090 Laptop GPU" in guide.text and "2 × NVIDIA" not in guide.text


@pytest.mark.slow
def test_best_gpu_for_ollama_guide_ranks_the_pulled_file(client):
    r = client.get("/guides/best-gpu-for-ollama")
    assert r.status_code == 200
    rows = re.findall(r'data-label="Weights">([^<]+)<', r.text)
    # 3 models × up to 5 setups (a model may rank fewer: 14 since session 18's plans), each the file `ollama pull`
    # fetches
    assert 12 <= len(rows) <= 15 and set(rows) == {"Q4_K_M"}


@pytest.mark.parametrize("slug", ["best-laptop", "best-budget-gpu", "best-used-gpu"])
def test_a_guides_full_ranking_link_is_the_same_ranking(client, slug):
    """"Full ranking with filters" opens /best with the guide's filters (form factor, budget, used prices, the
    Ollama file): its first setups are the guide's."""
    from html import unescape

    guide = client.get(f"/guides/{slug}").text
    links = [unescape(u) for u in re.findall(r'<a href="(/best\?[^"]+)">Full ranking', guide)]
    firsts = re.findall(r'<th scope="row" data-label="Setup"><a href="/hardware/[^"]+">([^<]+)</a>', guide)
    assert links and firsts
    top = re.findall(r'<th scope="row" data-label="Setup"><a href="/\?[^"]+">([^<]+)</a>', client.get(links[0]).text)
    assert top[:3] == firsts[:3], (links[0], top[:3], firsts[:3])


def test_cost_break_even_is_where_owning_meets_renting(client):
    """"A $1,600 card at $0.30/kWh against $0.50 an hour: from how many hours a day is owning cheaper?" The
    break-even on the page is where price/years + power × hours × 365 × rate equals rent × hours × 365,
    solved here from the figures the page states, and the chart marks it."""
    r = client.get("/cost", params={"model": "llama-3.1-8b", "gpu": "rtx-4090", "price": "1600", "rent": "0.5",
                                    "kwh": "0.30", "years": "3"})
    assert r.status_code == 200
    result = result_of(r.text) if "data-result" in r.text else r.text
    kw = float(re.search(r"electricity at ([\d.]+) kW", result).group(1))
    shown = float(re.search(r"<dt>Break-even</dt><dd>([\d.]+) h/day", result).group(1))
    expected = (1600 / 3) / (365 * (0.5 - kw * 0.30))
    assert shown == pytest.approx(expected, abs=0.01)
    svg = re.search(r"<svg class=\"chart\".*?</svg>", result, re.S).group(0)
    assert f"break-even {shown}" in svg or f"break-even {shown:g}" in svg


def test_check_page_states_the_ram_a_tight_verdict_needs(client):
    """A plan tight only with more RAM than the assumed 32 GiB says so on the page, as `runlocal check` does
    (review16b #2: the page said "Tight" with no condition; 76 layers of a 70B at 131,072 need ~75 GiB of RAM)."""
    from runlocal.check import CheckRequest, check

    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="rtx-4060", ctx=131072))
    assert plan.verdict == "tight" and plan.conditions            # what the CLI prints under its verdict
    shown = " ".join(re.sub(r"<[^>]+>", " ", client.get("/", params={"model": "llama-3.1-70b", "gpu": "rtx-4060",
                                                                     "ctx": "131072"}).text).split())
    assert "at 32 GiB it does not fit" in shown and "set System RAM to your machine" in shown
    for condition in plan.conditions:
        assert condition.split(" (set --ram")[0] in shown.replace("&#39;", "'")


def test_the_compute_table_is_built_for_the_model_pages_questions():
    """The model page plans its reference devices at 8,192; the compute table is built for the same questions, so a
    first visit reads the simulations instead of running them (review16b #5: /models/deepseek-r1 took 58 s)."""
    from runlocal import compute_table_build
    from runlocal.web import directory

    assert compute_table_build.MODEL_PAGE_DEVICES == directory.REFERENCE_DEVICES
    assert compute_table_build.MODEL_PAGE_CTX == directory.MODEL_PAGE_CTX
    asked = compute_table_build.questions("llama-3.1-8b")
    for gpu in directory.REFERENCE_DEVICES:
        assert ("check", {"model": "llama-3.1-8b", "gpu": gpu, "ctx": 8192, "use_measurements": False}) in asked


def test_the_page_plans_what_the_cli_plans_for_the_same_values(client):
    """review16c finding 7: the page swapped UD-Q4_K_XL for Q4_K_M, nf4 on vLLM for BF16 and dropped '==0.11.0' where
    the CLI plans them (llama.cpp's -hf picks Unsloth's UD-Q4_K_XL file; vLLM's --quantization bitsandbytes makes
    nf4 at load; Ollama 0.11.0's Go engine registers gpt-oss as 'gptoss', ollama/ollama v0.11.0
    model/models/gptoss/model.go). A format the runtime refuses is still dropped, in the refusal's own words."""
    r = client.get("/", params={"model": "qwen3-8b", "gpu": "rtx-4090", "quant": "UD-Q4_K_XL"})
    assert 'class="notice"' not in r.text and "unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL" in result_of(r.text)
    assert '<option value="UD-Q4_K_XL" selected>' in r.text           # the form shows what it planned
    r = client.get("/", params={"model": "qwen3-8b", "gpu": "rtx-4090", "quant": "nf4", "runtime": "vllm"})
    assert 'class="notice"' not in r.text and "--quantization bitsandbytes" in result_of(r.text)
    r = client.get("/", params={"model": "gpt-oss-20b", "gpu": "rtx-4090", "runtime": "ollama==0.11.0"})
    assert '<option value="ollama==0.11.0" selected>' in r.text and "cannot load" not in result_of(r.text)
    r = client.get("/", params={"model": "qwen3-8b", "gpu": "rtx-4090", "quant": "Q4_K_M", "runtime": "vllm"})
    notice = re.search(r'<div class="notice".*?</div>', r.text, re.DOTALL).group(0)
    assert "weights Q4_K_M: vLLM runs bf16" in notice and "planned with the checkpoint as published" in notice


def test_kv_per_token_under_tensor_parallel_says_it_is_each_gpus(client):
    """review16c finding 10: Llama 3.1 70B: 80 layers × (K + V) × 8 KV heads × 128 × 2 bytes = 320 KiB per token for
    the whole model; vLLM at TP 2 splits the KV heads, so each GPU's pool holds 160 KiB per token — the page printed
    160 KiB with nothing to say it is one GPU's (the CLI says 'on each GPU (TP 2)')."""
    r = client.get("/", params={"model": "llama-3.1-70b", "gpu": "rtx-3090", "n": "2", "runtime": "vllm",
                                "quant": "awq", "ctx": "8192"})
    assert re.search(r"<dt>KV cache per token</dt><dd>160 KiB <small>on each GPU \(TP 2\)</small></dd>", r.text)
    assert "2x24G or 24G,16G for several" in r.text


def test_a_cost_page_query_is_an_api_query(client):
    """review17b #4: the Cost page's fields carry /api/v1/cost's names (hours_per_day, kwh_price, rent_price: the
    CLI's and MCP's), so its query, and its "this answer as JSON" link, is an API query with the same answer;
    the API refuses a name it does not take (the page's former `hours`), naming it, instead of ignoring it."""
    query = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "price": "1600", "rent_price": "0.5", "kwh_price": "0.30",
             "years": "3", "hours_per_day": "6"}
    page = client.get("/cost", params=query)
    assert page.status_code == 200
    link = re.search(r'href="(/api/v1/cost\?[^"]+)">this answer as JSON', page.text).group(1).replace("&amp;", "&")
    api = client.get(link)
    assert api.status_code == 200 and api.json() == client.get("/api/v1/cost", params=query).json()
    assert api.json()["assumptions"]["hours_per_day"] == 6.0                  # not the default 8
    shown = re.search(r"<dt>Break-even</dt><dd>([\d.]+) h/day", page.text).group(1)
    assert float(shown) == api.json()["breakeven_hours_per_day"]
    old = client.get("/cost", params={**{k: v for k, v in query.items() if k != "hours_per_day"}, "hours": "6"})
    assert "at 6.0 h/day" in old.text                                      # the page's former name, still read
    refused = client.get("/api/v1/cost", params={**query, "hours": "25"})
    assert refused.status_code == 422 and [d["loc"] for d in refused.json()["detail"]] == [["query", "hours"]]


@pytest.mark.parametrize("path, query", [
    ("/api/v1/cost", {"model": "llama-3.1-8b", "gpu": "rtx-4090", "kwh": "1e-320"}),
    ("/api/v1/best", {"model": "llama-3.1-8b", "budjet": "500"}),
    ("/api/v1/compare", {"devices": "rtx-4090", "d": "rtx-3090"}),
    ("/api/v1/check", {"model": "llama-3.1-8b", "ngl": "10"}),
    ("/api/v1/curve", {"model": "llama-3.1-8b", "bogus": "1"}),
    ("/api/v1/models", {"q": "llama", "bogus": "1"}),
    ("/api/v1/hardware", {"bogus": "1"}),
    ("/api/v1/errors", {"bogus": "1"}),
    ("/api/v1/runtimes", {"bogus": "1"}),
    ("/api/v1/benchmarks", {"limit": "5", "page": "2"}),
])
def test_every_endpoint_refuses_a_parameter_it_does_not_take(client, path, query):
    unknown = next(k for k in query if k not in ("model", "gpu", "devices", "q", "limit"))
    r = client.get(path, params=query)
    assert r.status_code == 422, r.text
    assert [d["loc"] for d in r.json()["detail"]] == [["query", unknown]]
    assert r.json()["detail"][0]["msg"].startswith(f"{unknown}: not a parameter of {path} (it takes ")


def test_the_parameters_refused_are_those_the_openapi_document_does_not_list(client):
    """Each /api/v1 operation answers an undeclared parameter with the names it takes (api/errors.declared_query,
    read off the route's signature): exactly the query parameters of the app's own OpenAPI document."""
    doc = client.app.openapi()["paths"]
    operations = [(path, method, op) for path, ops in doc.items() if path.startswith("/api/v1/")
                  for method, op in ops.items()]
    assert len(operations) >= 15
    for path, method, op in operations:
        listed = sorted(p["name"] for p in op.get("parameters", []) if p["in"] == "query")
        r = client.request(method.upper(), re.sub(r"\{[^}]+\}", "1", path), params={"zz_not_a_parameter": "1"},
                           headers={"Authorization": "Bearer x"})
        assert r.status_code == 422, (path, method, r.text)
        msg = r.json()["detail"][0]["msg"]
        takes = msg.split("(it takes ", 1)[1].rstrip(")")
        assert takes == (", ".join(listed) or "no query parameter"), (path, method, msg)


@pytest.mark.parametrize("path", ["/nonexistent", "/best/x", "/models/x/y", "/errors/diagnose/x"])
def test_a_mistyped_site_url_is_a_page_and_an_api_path_stays_json(client, path):
    """review17b #10: /nonexistent answered FastAPI's {"detail":"Not Found"} as a bare JSON document (no navigation,
    no title, no lang). The site's paths answer the site's 404 page; the API's keep their JSON."""
    r = client.get(path)
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert '<html lang="en">' in r.text and "<title>Not found · runlocal</title>" in r.text
    assert f"There is no page at {path}." in r.text and 'href="/best"' in r.text        # the site's navigation
    api = client.get("/api/v1" + path)
    assert api.status_code == 404 and api.json() == {"detail": "Not Found"}
    wrong_method = client.post("/best")                                  # a page that answers GET only
    assert wrong_method.status_code == 405 and "text/html" in wrong_method.headers["content-type"]
    assert "GET" in wrong_method.headers["allow"]


def test_a_paste_over_the_servers_cap_answers_the_form_saying_the_limit(client):
    """A 3 MB paste into the diagnosis form: 413 with the form and the limit in bytes (the body is refused before
    the page reads it: api/app.BodyCap); the API's own 413 stays JSON."""
    from runlocal.api.app import MAX_BODY

    r = client.post("/errors/diagnose", data={"text": "x" * 3_000_000})
    assert r.status_code == 413 and r.headers["content-type"].startswith("text/html")
    said = re.search(r"Cannot answer that</h2><p>(.*?)</p>", r.text).group(1)
    assert said.startswith(f"text: the pasted log is over this server&#39;s limit of {MAX_BODY:,} bytes (256 KiB)")
    assert "(the form sent 3,000,005 bytes)" in said                  # "text=" and the 3,000,000 x's
    assert '<form id="diagnose-form"' in r.text
    other = client.post("/benchmarks/submit", data={"model": "x" * (MAX_BODY + 1)})          # any other site form
    assert other.status_code == 413 and "<h1>Request too large</h1>" in other.text
    assert f"This server reads at most {MAX_BODY:,} bytes (256 KiB) a request" in other.text
    api = client.post("/api/v1/diagnose", content=b"x" * (MAX_BODY + 1), headers={"content-type": "application/json"})
    assert api.status_code == 413 and api.json() == {"detail": f"request body over {MAX_BODY} bytes"}


def test_the_api_page_example_names_this_server(client):
    for base in ("http://127.0.0.1:8917", "http://localhost:8000"):
        html = TestClient(client.app, base_url=base).get("/api").text
        assert f"curl '{base}/api/v1/check?model=llama-3.1-8b" in html
    assert "Get Benchmark" not in html and "Get Curve" not in html          # every endpoint says what it does
