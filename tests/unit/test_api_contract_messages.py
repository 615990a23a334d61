"""review18 #9: a bad ``ctx``, ``runtime`` or ``ram`` on the HTTP API is answered with the one line the CLI prints
for the same input (422, ``loc`` [where, field]), not pydantic's regex or a union's two branches.

Before: GET ctx=abc → two entries, "Input should be a valid integer…" and "String should match pattern
'^\\s*[0-9][0-9_,]*…'"; runtime=foo → "String should match pattern '^(llama\\.cpp|…'"; POST "ram": 64 → "Input
should be a valid string". The expected line is the terminal's own (`runlocal check … --ctx abc` prints
"error: <line>", exit 2), read here through the CLI, not copied from the code under test."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from runlocal.api.app import create_app
from runlocal.cli import app as cli

CASES = [      # (the CLI's words, the API field and the value a caller sends)
    (["--ctx", "abc"], "ctx", "abc"),
    (["--runtime", "foo"], "runtime", "foo"),
    (["--ram", "64"], "ram", "64"),
    (["--ctx", "1.5"], "ctx", "1.5"),
    (["--vram", "lots"], "vram", "lots"),
]


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(cors_origins=[]), base_url="http://127.0.0.1")


def cli_line(words: list[str]) -> str:
    result = CliRunner().invoke(cli, ["check", "llama-3.1-8b", *words])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.startswith("error: ") and "\n" not in line, result.output
    return line.removeprefix("error: ")


def one_entry(r, where: str, field: str) -> str:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert len(detail) == 1 and detail[0]["loc"] == [where, field], detail
    msg = detail[0]["msg"]
    assert "pattern" not in msg and "Input should" not in msg
    return msg


@pytest.mark.parametrize("words, field, value", CASES)
def test_get_answers_the_clis_line(client, words, field, value):
    r = client.get("/api/v1/check", params={"model": "llama-3.1-8b", field: value})
    assert one_entry(r, "query", field) == cli_line(words)


@pytest.mark.parametrize("words, field, value", CASES)
def test_post_answers_the_clis_line(client, words, field, value):
    r = client.post("/api/v1/check", json={"model": "llama-3.1-8b", field: value})
    assert one_entry(r, "body", field) == cli_line(words)


def test_json_numbers_where_text_is_read_are_read_as_typed(client):
    """"ram": 64 is what `--ram 64` types: the same "no unit" line; "ctx": 1.5 is --ctx 1.5's."""
    r = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "ram": 64})
    assert one_entry(r, "body", "ram") == cli_line(["--ram", "64"])
    r = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "ctx": 1.5})
    assert one_entry(r, "body", "ctx") == cli_line(["--ctx", "1.5"])


def test_other_endpoints_share_the_line(client):
    ctx = cli_line(["--ctx", "abc"])
    for path, params in (("/api/v1/best", {"model": "llama-3.1-8b"}), ("/api/v1/curve", {"model": "llama-3.1-8b"}),
                         ("/api/v1/compare", {"model": "llama-3.1-8b", "devices": "rtx-4090"})):
        r = client.get(path, params={**params, "ctx": "abc"})
        assert one_entry(r, "query", "ctx") == ctx, path


def test_an_exponent_the_cli_reads_is_read(client):
    """`--ctx 1e4` is 10,000 tokens to the CLI (units.parse_tokens reads Python's float); the API's pattern had
    refused it."""
    r = client.get("/api/v1/check", params={"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": "1e4"})
    assert r.status_code == 200, r.text
    assert r.json()["settings"]["ctx"] == 10_000


def test_two_bad_fields_give_a_line_each(client):
    r = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "ctx": "abc", "runtime": "foo"})
    assert r.status_code == 422
    got = {d["loc"][1]: d["msg"] for d in r.json()["detail"]}
    assert got == {"ctx": cli_line(["--ctx", "abc"]), "runtime": cli_line(["--runtime", "foo"])}


@pytest.mark.parametrize(("method", "path", "payload", "loc", "line"), [
    # pydantic's own sentence where the contract has no line on the field, after the field's name (site23)
    ("post", "/api/v1/check", {"model": "llama-3.1-8b", "bogus": 1}, ["body", "bogus"],
     "bogus: Extra inputs are not permitted"),
    ("post", "/api/v1/check", {"gpu": "rtx-4090"}, ["body", "model"], "model: Field required"),
    ("post", "/api/v1/diagnose", {"text": "CUDA error: out of memory", "bogus": 2}, ["body", "bogus"],
     "bogus: Extra inputs are not permitted"),
    ("get", "/api/v1/cost", {"model": "llama-3.1-8b", "gpu": "rtx-4090", "hours_per_day": "abc"},
     ["query", "hours_per_day"], "hours_per_day: Input should be a valid number, unable to parse string as a number"),
])
def test_pydantics_words_name_the_field(client, method, path, payload, loc, line):
    r = client.post(path, json=payload) if method == "post" else client.get(path, params=payload)
    assert r.status_code == 422
    assert r.json()["detail"] == [{"loc": loc, "msg": line, "type": r.json()["detail"][0]["type"]}]


@pytest.mark.parametrize(("path", "query", "loc", "line"), [
    # a catalog miss's line (errors.UnknownNameError: "unknown KIND 'NAME'") after the field it is about, as MCP
    # says it; the names are far from every catalog name, so no did-you-mean follows
    ("/api/v1/check", {"model": "zzqqxx-nosuch", "gpu": "rtx-4090"}, ["query", "model"],
     "model: unknown model 'zzqqxx-nosuch'"),
    ("/api/v1/check", {"model": "llama-3.1-8b", "gpu": "zzqqxx-nosuch"}, ["query", "gpu"],
     "gpu: unknown device 'zzqqxx-nosuch'"),
    ("/api/v1/models", {"fits": "true", "gpu": "zzqqxx-nosuch"}, ["query", "gpu"],
     "gpu: unknown device 'zzqqxx-nosuch'"),
    # the store's routes (api/benchmarks.PlainErrors) too
    ("/api/v1/benchmarks", {"limit": "abc"}, ["query", "limit"],
     "limit: Input should be a valid integer, unable to parse string as an integer"),
])
def test_an_error_line_names_its_field(client, path, query, loc, line):
    r = client.get(path, params=query)
    assert r.status_code == 422
    assert [(d["loc"], d["msg"]) for d in r.json()["detail"]] == [(loc, line)]
