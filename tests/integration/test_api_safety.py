"""The server as an attacker would try it (issue 15), on loopback: what it reads, how long it works, what it answers.

Each case is one request an anonymous caller could send; the server must answer 4xx naming the field, read
nothing it was not allowed to, connect nowhere it was not allowed to, and stay responsive.
"""

from __future__ import annotations

import builtins
import io
import os
import pathlib
import socket
import threading
import time
from contextlib import contextmanager

import pytest
from factories import write_llama_gguf
from fastapi.testclient import TestClient

from runlocal.api.app import create_app
from runlocal.model.policy import ReadPolicy


def make_client(tmp_path, **kw) -> TestClient:
    return TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="s3cret",
                                 cors_origins=[], **kw))


@contextmanager
def listener():
    """A TCP listener on 127.0.0.1 that counts the connections it accepts (it must accept none)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.1)
    seen = {"connections": 0}
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            seen["connections"] += 1
            conn.close()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield sock.getsockname()[1], seen
    finally:
        stop.set()
        t.join(2)
        sock.close()


def assert_field_error(r, field: str, status: int = 422):
    assert r.status_code == status, r.text
    assert any(field in d["loc"] for d in r.json()["detail"]), r.text


# --- the server connects nowhere it was not allowed to ------------------------------------------------

@pytest.mark.parametrize("allow", [(), ("127.0.0.1",)])
def test_url_to_a_loopback_listener_is_never_fetched(tmp_path, allow):
    # by default URLs are refused outright; allowing the host does not allow a loopback address
    client = make_client(tmp_path, policy=ReadPolicy.server(remote_hosts=allow))
    with listener() as (port, seen):
        for model in (f"http://127.0.0.1:{port}/m.gguf", f"http://127.0.0.1:{port}/secret"):
            assert_field_error(client.post("/api/v1/check", json={"model": model}), "model")
            assert_field_error(client.get("/api/v1/check", params={"model": model}), "model")
            assert_field_error(client.get("/api/v1/best", params={"model": model}), "model")
            assert_field_error(client.get("/api/v1/compare", params={"devices": "rtx-4090", "model": model}), "model")
            r = client.post("/api/v1/curve", json={"model": model})
            assert_field_error(r, "model")
            assert str(port) not in r.text
        time.sleep(0.2)
    assert seen["connections"] == 0


def test_a_name_that_resolves_to_loopback_is_refused_before_connecting(tmp_path, monkeypatch):
    # an allowed host whose DNS answer is a loopback address (DNS rebinding): checked on the connection itself
    real = socket.getaddrinfo
    with listener() as (port, seen):
        def fake(host, *a, **kw):
            return real("127.0.0.1", *a, **kw) if host == "models.example" else real(host, *a, **kw)
        monkeypatch.setattr(socket, "getaddrinfo", fake)
        client = make_client(tmp_path, policy=ReadPolicy.server(remote_hosts=["models.example"]))
        r = client.get("/api/v1/check", params={"model": f"http://models.example:{port}/m.gguf"})
        assert_field_error(r, "model")
        assert "127.0.0.1" not in r.text and str(port) not in r.text
        time.sleep(0.2)
    assert seen["connections"] == 0


def test_redirect_to_another_host_is_not_followed(tmp_path):
    """Host A answers 302 to host B: under a server policy B is never contacted (checked without the address
    guard, which would refuse loopback A before any redirect)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from runlocal.errors import InputError
    from runlocal.model.remote import read_remote_gguf

    with listener() as (b_port, seen):
        class Redirect(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{b_port}/m.gguf")
                self.end_headers()

        a = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=a.serve_forever, daemon=True).start()
        try:
            policy = ReadPolicy(local_paths=False, urls=True, remote_hosts=frozenset({"127.0.0.1"}),
                                same_host_redirects=True, plain_errors=True)
            with pytest.raises(InputError, match="redirected to another host"):
                read_remote_gguf(f"http://127.0.0.1:{a.server_address[1]}/m.gguf", policy=policy)
        finally:
            a.shutdown()
        time.sleep(0.2)
    assert seen["connections"] == 0


# --- the server reads no file it was not allowed to -------------------------------------------------------

@pytest.fixture
def opened(monkeypatch):
    """Every path opened ("open", path) or stat'ed ("stat", path) in this process while the test runs."""
    seen: list[str] = []
    real_open, real_path_open, real_stat = builtins.open, pathlib.Path.open, os.stat

    def spy_open(file, *a, **kw):
        seen.append(("open", os.fspath(file) if isinstance(file, (str, os.PathLike)) else repr(file)))
        return real_open(file, *a, **kw)

    def spy_path_open(self, *a, **kw):
        seen.append(("open", str(self)))
        return real_path_open(self, *a, **kw)

    def spy_stat(path, *a, **kw):
        seen.append(("stat", os.fspath(path) if isinstance(path, (str, os.PathLike)) else repr(path)))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    monkeypatch.setattr(pathlib.Path, "open", spy_path_open)
    monkeypatch.setattr(os, "stat", spy_stat)
    return seen


@pytest.fixture
def planted(tmp_path):
    """A secret folder with a model-looking file and a JSON file outside anything the server allows."""
    secret = tmp_path / "secret"
    secret.mkdir()
    write_llama_gguf(secret / "m.gguf")
    (secret / "config.json").write_text('{"model_type": "top-secret-value"}')
    return secret


def test_local_paths_are_refused_by_default_and_never_touched(tmp_path, planted, opened):
    client = make_client(tmp_path)
    answers = []
    for model in (str(planted / "m.gguf"), str(planted / "config.json"), str(planted), str(planted / "absent.gguf"),
                  "../" + planted.name + "/m.gguf", "~/x.gguf", "/etc/shadow"):
        r = client.post("/api/v1/check", json={"model": model})
        assert_field_error(r, "model")
        assert "top-secret-value" not in r.text
        answers.append(r.json()["detail"][0]["msg"])
    assert len(set(answers)) == 1        # existing and missing files answer alike: no existence oracle
    assert not [p for _, p in opened if "secret" in p or "shadow" in p]      # not even looked up


def test_allowed_folder_only(tmp_path, planted, opened):
    allowed = tmp_path / "models"
    allowed.mkdir()
    write_llama_gguf(allowed / "ok.gguf")
    (allowed / "escape.gguf").symlink_to(planted / "m.gguf")        # a symlink out of the folder
    client = make_client(tmp_path, policy=ReadPolicy.server(local_dir=allowed))
    assert client.post("/api/v1/check", json={"model": "ok.gguf", "gpu": "rtx-4090"}).status_code == 200
    assert client.post("/api/v1/check", json={"model": str(allowed / "ok.gguf"), "gpu": "rtx-4090"}).status_code == 200
    for model in ("escape.gguf", "../secret/m.gguf", str(planted / "m.gguf"), str(planted / "config.json")):
        assert_field_error(client.post("/api/v1/check", json={"model": model}), "model")
    opened_files = [p for kind, p in opened if kind == "open"]
    assert not [p for p in opened_files if "secret" in p]
    assert any(p.endswith("ok.gguf") for p in opened_files)        # the spy sees reads: the allowed one was read
    # only the symlink's target was looked up (to resolve it), never a path named outside the folder
    assert {p for _, p in opened if "secret" in p} <= {str(planted / "m.gguf")}


def test_the_servers_hf_token_is_sent_only_when_the_operator_says_so(monkeypatch):
    import huggingface_hub

    from runlocal.model import hub
    from runlocal.model.hub import read_hub_model

    tokens = []
    monkeypatch.setattr(hub, "_hub_reachable", lambda *a, **kw: True)   # the build machine has no network

    def fake_download(repo_id, filename, **kw):
        tokens.append(kw.get("token", "missing"))
        raise RuntimeError("stop")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda *a, **kw: (_ for _ in ()).throw(OSError()))
    for policy, expected in ((ReadPolicy.server(), False), (ReadPolicy.server(use_hf_token=True), None),
                             (ReadPolicy(), None)):
        with pytest.raises(RuntimeError, match="stop"):
            read_hub_model("someone/private-model", policy=policy)
        assert tokens[-1] is expected


# --- the inputs that answered 500 (issue 15) now answer 4xx naming the field -----------------------------------

FIVE_HUNDREDS = [
    ("post", {"json": {"model": "llama-3.1-8b", "gpu": "rtx-4090", "kv_cache": "fp8"}}, "kv_cache"),
    ("get", {"params": {"model": "llama-3.1-8b", "gpu": "rtx-4090", "kv_cache": "fp8"}}, "kv_cache"),
    ("post", {"json": {"model": "llama-3.1-8b", "cache_type_k": "fp8_e4m3"}}, "cache_type_k"),
    ("post", {"json": {"model": "x" * 300}}, "model"),                  # ENAMETOOLONG from Path.exists
    ("post", {"json": {"model": "a/" + "x" * 300}}, "model"),
    ("get", {"params": {"model": "llama-3.1-8b", "ctx": str(10**30)}}, "ctx"),
    ("get", {"params": {"model": "llama-3.1-8b", "n_gpu_layers": "-3"}}, "n_gpu_layers"),
    ("get", {"params": {"model": "llama-3.1-8b", "runtime": "r" * 100}}, "runtime"),
    ("get", {"params": {"model": "llama-3.1-8b", "gpu_memory_utilization": "NaN"}}, "gpu_memory_utilization"),
    ("get", {"params": {"model": "llama-3.1-8b", "mem_fraction_static": "Infinity"}}, "mem_fraction_static"),
    ("post", {"content": b'{"model": "llama-3.1-8b", "gpu_memory_utilization": NaN}'}, "gpu_memory_utilization"),
    ("post", {"content": b'{"model": "llama-3.1-8b", "mem_fraction_static": -Infinity}'}, "mem_fraction_static"),
    ("post", {"json": {"model": "llama-3.1-8b", "tensor_split": "nan,1"}}, "tensor_split"),
    ("post", {"json": {"model": "llama-3.1-8b", "vram": "1e400G"}}, "vram"),
    ("post", {"json": {"model": "llama-3.1-8b", "parallel": 0}}, "parallel"),
    ("get", {"params": {"model": "llama-3.1-8b", "ctx": "32q"}}, "ctx"),
]


@pytest.mark.parametrize("method, kw, field", FIVE_HUNDREDS)
def test_former_500s_are_4xx_naming_the_field(tmp_path, method, kw, field):
    client = make_client(tmp_path)
    if "content" in kw:
        kw = {**kw, "headers": {"content-type": "application/json"}}
    r = getattr(client, method)("/api/v1/check", **kw)
    assert_field_error(r, field)
    if method == "post":            # /curve takes the same body, with the same answer
        assert_field_error(client.post("/api/v1/curve", **kw), field)


def test_other_endpoints_bound_their_parameters(tmp_path):
    client = make_client(tmp_path)
    # an id past SQL BIGINT is no row: 404, not an OverflowError (tests/test_store_api.py covers 2**63)
    assert client.delete(f"/api/v1/benchmarks/{10**30}", headers={"Authorization": "Bearer s3cret"}).status_code == 404
    assert_field_error(client.get("/api/v1/best", params={"model": "llama-3.1-8b", "budget": "inf"}), "budget")
    assert_field_error(client.get("/api/v1/best", params={"model": "llama-3.1-8b", "ctx": str(10**30)}), "ctx")
    assert_field_error(client.get("/api/v1/compare", params={"devices": "rtx-4090", "runtime": "x" * 100}), "runtime")
    assert_field_error(client.get("/api/v1/compare", params={"devices": "no-such-card"}), "devices")


def test_sizes_and_tokens_as_the_cli_types_them(tmp_path):
    client = make_client(tmp_path)
    q = {"model": "llama-3.1-8b", "vram": "24G", "ram": "64GiB", "ctx": "32k"}
    g = client.get("/api/v1/check", params=q)
    p = client.post("/api/v1/check", json=q)
    assert g.status_code == p.status_code == 200
    assert g.json()["settings"]["ctx"] == p.json()["settings"]["ctx"] == 32768


# --- bounded work -------------------------------------------------------------------------------------------

def live_server(app):
    """The app served by uvicorn on a free loopback port (runlocal.testing's helper)."""
    from runlocal.testing.browser import running_app

    return running_app(app)


def test_slow_plans_answer_503_while_cheap_requests_are_served(tmp_path, monkeypatch):
    import httpx

    import runlocal.check as check_module

    real_check = check_module.check

    def slow_check(req, policy=None):
        if req.model == "qwen3-8b":
            time.sleep(3)               # a plan that takes far longer than the deadline
        return real_check(req, policy)

    monkeypatch.setattr(check_module, "check", slow_check)
    app = create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", plan_workers=1, plan_deadline_s=0.5,
                     plan_queue_wait_s=0.2)
    answers: list[httpx.Response] = []
    with live_server(app) as base:
        def slow(i):
            answers.append(httpx.get(base + "/api/v1/check", params={"model": "qwen3-8b", "ctx": 4096 + i}, timeout=10))

        threads = [threading.Thread(target=slow, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.1)
        t0 = time.monotonic()
        cheap = httpx.get(base + "/api/v1/models", timeout=10)
        cheap_s = time.monotonic() - t0
        for t in threads:
            t.join()
    assert cheap.status_code == 200 and cheap_s < 1.0
    assert [r.status_code for r in answers] == [503] * 4
    assert all(int(r.headers["retry-after"]) >= 1 for r in answers)
    assert all("server" in r.json()["detail"][0]["loc"] for r in answers)


def test_writes_are_rate_limited_per_client(tmp_path):
    client = make_client(tmp_path, writes_per_minute=3)         # a burst of 1, then one every 20 s
    bench = {"device": "rtx-4090", "runtime": "llama.cpp", "model": "llama-3.1-8b", "decode_tokens_per_s": 100.0}
    first = client.post("/api/v1/benchmarks", json=bench)
    second = client.post("/api/v1/benchmarks", json=bench)
    assert first.status_code in (200, 201) and second.status_code == 429
    assert int(second.headers["retry-after"]) >= 1
    assert client.get("/api/v1/models").status_code == 200           # reads are not limited


def test_host_header_and_security_headers(tmp_path):
    client = make_client(tmp_path, allowed_hosts=["localhost", "127.0.0.1"])
    assert client.get("/api/v1/models", headers={"host": "attacker.example"}).status_code == 400
    ok = TestClient(client.app, base_url="http://localhost")
    for path in ("/", "/api/v1/models", "/api/v1/check?model=x&ctx=-1"):
        r = ok.get(path)
        assert r.status_code in (200, 422)
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert r.headers["referrer-policy"] == "no-referrer"
    page_csp = ok.get("/").headers["content-security-policy"]
    assert "script-src 'self'" in page_csp and "unsafe-inline" not in page_csp


def test_a_shard_index_cannot_point_outside_the_allowed_folder(tmp_path, planted, opened):
    import json

    model = tmp_path / "models" / "m"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                                                   "hidden_size": 256, "num_hidden_layers": 2,
                                                   "num_attention_heads": 8, "num_key_value_heads": 2,
                                                   "intermediate_size": 512, "vocab_size": 1000}))
    (model / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "../../secret/m.gguf"}}))
    client = make_client(tmp_path, policy=ReadPolicy.server(local_dir=tmp_path / "models"))
    assert_field_error(client.post("/api/v1/check", json={"model": "m"}), "model")
    assert not [p for kind, p in opened if kind == "open" and "secret" in p]


@pytest.mark.parametrize("address, public", [
    ("8.8.8.8", True), ("2606:4700:4700::1111", True),
    ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.1", False), ("192.168.1.1", False),
    ("169.254.169.254", False),                 # cloud metadata: link-local
    ("0.0.0.0", False), ("224.0.0.1", False), ("255.255.255.255", False), ("100.64.0.1", False),   # shared (CGNAT)
    ("::1", False), ("fe80::1", False), ("fc00::1", False), ("ff02::1", False),
    ("::ffff:127.0.0.1", False),                # IPv4-mapped loopback
    ("2002:7f00:1::", False),                   # 6to4 of 127.0.0.1
    ("not-an-address", False),
])
def test_public_addresses(address, public):
    from runlocal.model.policy import is_public_address

    assert is_public_address(address) is public


def test_remote_reads_stop_at_the_deadline_and_the_byte_cap(tmp_path):
    """A server that drips its answer, and one that sends more than the cap: both are cut off (checked with the
    address guard off, since the test server is on loopback)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from runlocal.errors import InputError
    from runlocal.model.remote import read_remote_gguf

    class Drip(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(206)
            self.send_header("Content-Range", "bytes 0-1048575/1073741824")
            self.end_headers()
            body = b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * (1 << 20)
            step = 64 if "drip" in self.path else 1 << 16
            try:
                for i in range(0, len(body), step):
                    self.wfile.write(body[i:i + step])
                    self.wfile.flush()
                    if "drip" in self.path:
                        time.sleep(0.05)
            except OSError:
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        policy = ReadPolicy(local_paths=False, urls=True, same_host_redirects=True, plain_errors=True,
                            deadline_s=1.0, max_remote_bytes=1 << 30)
        t0 = time.monotonic()
        with pytest.raises(InputError, match="took over 1 s"):
            read_remote_gguf(base + "/drip.gguf", policy=policy)
        assert time.monotonic() - t0 < 5
        capped = ReadPolicy(local_paths=False, urls=True, same_host_redirects=True, plain_errors=True,
                            deadline_s=30.0, max_remote_bytes=256 << 10)
        with pytest.raises(InputError, match="more than 262,144 bytes"):
            read_remote_gguf(base + "/big.gguf", policy=capped)
    finally:
        server.shutdown()


def test_retries_share_the_plan_under_way_and_get_its_answer(tmp_path, monkeypatch):
    import httpx

    import runlocal.check as check_module

    real_check, calls = check_module.check, []

    def slow_check(req, policy=None):
        calls.append(req.model)
        time.sleep(1.5)
        return real_check(req, policy)

    monkeypatch.setattr(check_module, "check", slow_check)
    app = create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", plan_workers=1, plan_deadline_s=0.3)
    q = {"model": "qwen3-8b", "gpu": "rtx-4090", "ctx": 4096}
    with live_server(app) as base:
        first = [httpx.get(base + "/api/v1/check", params=q, timeout=10) for _ in range(3)]   # each past the deadline
        time.sleep(1.6)
        retry = httpx.get(base + "/api/v1/check", params=q, timeout=10)
    assert [r.status_code for r in first] == [503] * 3
    assert retry.status_code == 200 and retry.json()["settings"]["ctx"] == 4096
    assert calls == ["qwen3-8b"]                 # one computation for all four requests


# --- the site's pages read under the same policy (review17b #1) ---------------------------------------------
# Each page that plans a model named in its query: (path, the query's other fields, the field naming the model).
SITE_PAGES = [("/", {"gpu": "rtx-4090"}, "model"), ("/best", {}, "model"), ("/compare", {"d": "rtx-4090"}, "model"),
              ("/cost", {"gpu": "rtx-4090"}, "model")]
# a vLLM log naming a model and a GPU: diagnose re-plans the model it names (diagnose/fixes.replan_fixes)
VLLM_OOM_LOG = ("INFO non-default args: {{'model': '{model}', 'max_model_len': 131072}}\n"
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                "of 23.65 GiB of which 1.2 GiB is free. NVIDIA GeForce RTX 4090\n")


def site_client(tmp_path, **kw) -> TestClient:
    return TestClient(make_client(tmp_path, **kw).app, base_url="http://127.0.0.1")


def page_refusal(r) -> str:
    """The page's one-line refusal ("Cannot answer that" box), which must name the field."""
    assert r.status_code == 422, r.text[:300]
    import re

    m = re.search(r"Cannot answer that</h2><p>(.*?)</p>", r.text, re.DOTALL)
    assert m, r.text[:300]
    return m.group(1)


def test_site_pages_read_no_local_path_and_fetch_no_url(tmp_path, planted, opened):
    client = site_client(tmp_path)
    with listener() as (port, seen):
        hostile = [str(planted), str(planted / "m.gguf"), str(planted / "config.json"), "/etc/passwd",
                   "file:///etc/passwd", f"file://{planted}/config.json", "../" + planted.name + "/m.gguf",
                   "../../etc/passwd", f"http://127.0.0.1:{port}/m.gguf", f"http://localhost:{port}/secret"]
        for path, others, field in SITE_PAGES:
            for model in hostile:
                said = page_refusal(client.get(path, params={**others, field: model}))
                assert said.startswith(f"{field}: this server does not read "), (path, model, said)
                assert "top-secret-value" not in said and str(port) not in said
        time.sleep(0.2)
    assert seen["connections"] == 0                     # the loopback listener was never contacted
    assert not [p for _, p in opened if "secret" in p or p.startswith("/etc/")]      # nor a file looked up


def test_model_pages_take_catalog_names_only(tmp_path, planted, opened):
    client = site_client(tmp_path)
    for name in ("..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", str(planted).lstrip("/").replace("/", "%2F")):
        assert client.get(f"/models/{name}").status_code == 404
    assert not [p for _, p in opened if "secret" in p or p.startswith("/etc/")]


def test_a_log_naming_a_local_model_is_not_read_by_diagnose(tmp_path, planted, opened):
    """/api/v1/diagnose and the site's diagnose form re-plan the model a pasted log names: a path is not read, nor
    looked up (whether the fixes are re-planned would tell whether it exists). The CLI's diagnose still reads it."""
    from runlocal.diagnose.fixes import with_computed_fixes
    from runlocal.diagnose.reading import diagnose_text

    client = site_client(tmp_path)
    log = VLLM_OOM_LOG.format(model=planted)
    api = client.post("/api/v1/diagnose", json={"text": log})
    site = client.post("/errors/diagnose", data={"text": log})
    assert api.status_code == 200 and site.status_code == 200
    assert api.json()["extracted"]["model"] == str(planted)          # read off the log, as text
    assert not [p for _, p in opened if "secret" in p]
    with_computed_fixes(diagnose_text(log), None)                     # the CLI's policy: the user's own files
    assert [p for kind, p in opened if kind == "open" and p == str(planted / "config.json")]


def test_site_pages_read_what_the_operator_allows_and_nothing_outside(tmp_path, planted, opened):
    allowed = tmp_path / "models"
    allowed.mkdir()
    write_llama_gguf(allowed / "ok.gguf")
    client = site_client(tmp_path, policy=ReadPolicy.server(local_dir=allowed))
    for path, others, field in SITE_PAGES:
        r = client.get(path, params={**others, field: "ok.gguf"})
        assert r.status_code == 200, (path, r.text[:300])
        assert "Cannot answer that" not in r.text
        for model in ("../secret/m.gguf", str(planted / "m.gguf"), "/etc/passwd"):
            said = page_refusal(client.get(path, params={**others, field: model}))
            assert said == f"{field}: this server reads local paths only inside its allowed folder", (path, said)
    assert any(kind == "open" and p.endswith("ok.gguf") for kind, p in opened)
    assert not [p for _, p in opened if "secret" in p or p.startswith("/etc/")]


def test_the_mcp_http_diagnose_tool_reads_no_path_a_log_names(planted, opened):
    pytest.importorskip("mcp")
    from runlocal.mcp_server import ReadPolicy as McpPolicy
    from runlocal.mcp_server import build_arg_models, make_tool

    log = VLLM_OOM_LOG.format(model=planted)
    args = build_arg_models()["diagnose"]
    http_answer = make_tool("diagnose", args, McpPolicy.server()).fn({"text": log})
    assert isinstance(http_answer, str) and str(planted) in http_answer       # diagnosed, the path as text
    assert not [p for _, p in opened if "secret" in p]
    make_tool("diagnose", args, McpPolicy()).fn({"text": log})                  # stdio: the user's own files
    assert [p for kind, p in opened if kind == "open" and p == str(planted / "config.json")]
