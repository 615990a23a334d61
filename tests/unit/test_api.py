"""The HTTP API in-process: same objects as the CLI, 422 naming the field, capped bodies, the store."""

import os

import pytest
from factories import write_llama_gguf
from fastapi.testclient import TestClient

from runlocal.api.app import create_app
from runlocal.model.policy import ReadPolicy


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory):
    return str(write_llama_gguf(tmp_path_factory.mktemp("m") / "m.gguf", n_layers=4, hidden=512, heads=8, kv_heads=2))


@pytest.fixture(scope="module")
def client(tmp_path_factory, gguf_path):
    # the operator allows the folder of the test model (a server reads no local path otherwise); one app for the
    # module's tests, which only read (no write is rate-limited or stored)
    app = create_app(store_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'b.sqlite3'}", admin_token="s3cret",
                     cors_origins=[],
                     policy=ReadPolicy.server(local_dir=os.path.dirname(gguf_path)))
    with TestClient(app) as c:
        yield c


def test_check_returns_the_cli_json_shape(client, gguf_path):
    r = client.post("/api/v1/check", json={"model": gguf_path, "vram": "8G", "ram": "16G", "ctx": 4096})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["verdict"] in ("fits", "tight", "does_not_fit", "unknown")
    assert doc["settings"]["ctx"] == 4096 and isinstance(doc["memory"]["total"], int)
    g = client.get("/api/v1/check", params={"model": gguf_path, "vram": "8G", "ram": "16G", "ctx": 4096})
    assert g.json()["memory"] == doc["memory"]


@pytest.mark.parametrize("body, field", [
    ({"model": "x", "ctx": -1}, "ctx"),                # pydantic bound (0 is llama-server's -c 0 since mends23b)
    ({"model": "x", "parallel": 0}, "parallel"),
    ({"model": "x", "flash_attn": "maybe"}, "flash_attn"),
    ({"model": "x", "surprise": 1}, "surprise"),       # unknown fields are refused, not ignored
])
def test_validation_422_names_the_field(client, body, field):
    r = client.post("/api/v1/check", json=body)
    assert r.status_code == 422
    assert any(field in d["loc"] for d in r.json()["detail"])


def test_domain_error_422_names_the_field(client, gguf_path):
    r = client.post("/api/v1/check", json={"model": gguf_path, "vram": "lots"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "vram"]


def test_missing_model_is_404(client, gguf_path):
    r = client.post("/api/v1/check", json={"model": os.path.join(os.path.dirname(gguf_path), "absent.gguf")})
    assert r.status_code == 404
    r = client.post("/api/v1/check", json={"model": "/no/such/model.gguf"})    # outside the allowed folder
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "model"]


def test_body_cap(client):
    r = client.post("/api/v1/check", content=b"{" + b" " * (300 * 1024) + b"}",
                    headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_cors_off_by_default(client):
    r = client.get("/api/v1/models", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers


def test_body_cap_without_content_length(client):
    def chunks():                                   # chunked: no Content-Length to refuse up front
        for _ in range(40):
            yield b" " * 8192
    r = client.post("/api/v1/check", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_cors_when_configured_also_on_cached_answers(tmp_path):
    app = create_app(store_url=f"sqlite:///{tmp_path / 'c.sqlite3'}", cors_origins=["https://ok.example"])
    c = TestClient(app)
    q = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": 4096}
    first = c.get("/api/v1/check", params=q, headers={"Origin": "https://ok.example"})
    again = c.get("/api/v1/check", params=q, headers={"Origin": "https://ok.example"})   # from the cache
    assert first.json() == again.json()
    for r in (first, again):
        assert r.headers["access-control-allow-origin"] == "https://ok.example"


def test_cached_get_answer_is_the_validated_one(client):
    q = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": 4096}
    assert client.get("/api/v1/check", params=q).json() == client.get("/api/v1/check", params=q).json()
    bad = {"model": "llama-3.1-8b", "ctx": -5}
    for _ in range(2):                               # errors are never served from the cache
        r = client.get("/api/v1/check", params=bad)
        assert r.status_code == 422 and "ctx" in r.text


def test_openapi_document(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/v1/check", "/api/v1/benchmarks"} <= paths.keys()


# The benchmark endpoints and the store: tests/test_store*.py (SQLite and PostgreSQL).
