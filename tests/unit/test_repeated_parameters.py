"""A query parameter given twice (`?ctx=4096&ctx=8192`) is refused with 422 naming it, on the API and on the site's
pages, instead of being read last-one-wins (Starlette's QueryParams[k] is the last value: a request saying two
contexts was answered for one of them, with nothing said). Parameters that are lists take every value: the API's
override_tensor (a list field of CheckBody), the check page's device rows (gpu / n), Compare's devices (d)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from runlocal.testing.browser import served_app

    app = served_app(store_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'b.sqlite3'}", admin_token="x")
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.mark.parametrize("path, query, name", [
    ("/api/v1/check", "model=qwen3-8b&gpu=rtx-4090&ctx=4096&ctx=8192", "ctx"),
    ("/api/v1/curve", "model=qwen3-8b&model=llama-3.1-8b&gpu=rtx-4090", "model"),
    ("/api/v1/cost", "model=qwen3-8b&gpu=rtx-4090&gpu=rtx-3090", "gpu"),
    ("/api/v1/best", "model=qwen3-8b&users=1&users=4", "users"),
    ("/api/v1/compare", "devices=rtx-4090&devices=rtx-3090", "devices"),
    ("/api/v1/models", "q=llama&q=qwen", "q"),
])
def test_the_api_refuses_a_parameter_given_twice(client, path, query, name):
    r = client.get(f"{path}?{query}")
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert [d["loc"] for d in detail] == [["query", name]]
    assert detail[0]["msg"].startswith(f"{name}: given 2 times") and "expected one value" in detail[0]["msg"]


def test_a_cached_answer_does_not_hide_the_repeat(client):
    # /api/v1/check answers a GET from its cache by the raw query before parsing: the one-valued query is cached,
    # the query with the repeat is another string and is still refused
    assert client.get("/api/v1/check?model=qwen3-8b&gpu=rtx-4090&ctx=4096").status_code == 200
    assert client.get("/api/v1/check?model=qwen3-8b&gpu=rtx-4090&ctx=4096&ctx=8192").status_code == 422


def test_a_list_parameter_takes_each_value(client):
    r = client.get("/api/v1/check?model=qwen3-30b-a3b&gpu=rtx-4090&override_tensor=exps%3DCPU"
                   "&override_tensor=blk%5C.1%5C.%3DCPU")
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("path, query, name", [
    ("/", "model=qwen3-8b&gpu=rtx-4090&ctx=4096&ctx=8192", "ctx"),
    ("/best", "model=qwen3-8b&budget=500&budget=900", "budget"),
    ("/cost", "model=qwen3-8b&gpu=rtx-4090&years=1&years=5", "years"),
    ("/compare", "d=rtx-4090&model=qwen3-8b&model=llama-3.1-8b", "model"),
    ("/errors", "q=cuda&q=oom", "q"),
])
def test_the_pages_refuse_a_parameter_given_twice(client, path, query, name):
    r = client.get(f"{path}?{query}")
    assert r.status_code == 422 and "text/html" in r.headers["content-type"], r.text[:300]
    assert f"{name}: given 2 times" in r.text


def test_the_pages_list_fields_take_each_value(client):
    assert client.get("/?model=qwen3-8b&gpu=rtx-4090&n=1&gpu=rtx-3090&n=1").status_code == 200
    assert client.get("/compare?d=rtx-4090&d=rtx-3090&model=qwen3-8b").status_code == 200
