"""review21 #10: one refusal, one wording, on every door — the CLI's line, under the field as the caller spelled it.

The expected line is the terminal's own (`runlocal … --ngl -3` prints "error: <line>", exit 2), read here through the
CLI, with its first word — the CLI's flag — replaced by the field the HTTP / MCP caller sent (n_gpu_layers, kv_cache).
Before: HTTP answered pydantic's "Input should be greater than or equal to -2" and "Input should be greater than
0"; MCP said "ngl: …" to an agent that sent n_gpu_layers and "ctx.str: …; ctx.int: …" for a JSON 1e30."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from runlocal.api.app import create_app
from runlocal.cli import app as cli
from runlocal.mcp_server import ReadPolicy, build_arg_models, make_tool


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(cors_origins=[]), base_url="http://127.0.0.1")


def cli_line(*words: str) -> str:
    result = CliRunner().invoke(cli, list(words))
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())
    assert line.startswith("error: "), result.output
    return line.removeprefix("error: ")


def as_field(line: str, flag: str, field: str) -> str:
    assert line.startswith(f"{flag}: "), line
    return f"{field}: " + line.removeprefix(f"{flag}: ")


def http_line(r, where: str, field: str) -> str:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert len(detail) == 1 and detail[0]["loc"] == [where, field], detail
    assert "Input should" not in detail[0]["msg"]
    return detail[0]["msg"]


def mcp_line(tool: str, arguments: dict) -> str:
    models = build_arg_models()
    result = make_tool(tool, models[tool], ReadPolicy()).fn(arguments)
    assert result.is_error
    return result.content[0].text


def test_a_layer_count_below_the_bound(client):
    expected = as_field(cli_line("check", "llama-3.1-8b", "--ngl", "-3"), "ngl", "n_gpu_layers")
    r = client.get("/api/v1/check", params={"model": "llama-3.1-8b", "n_gpu_layers": "-3"})
    assert http_line(r, "query", "n_gpu_layers") == expected
    r = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "n_gpu_layers": -3})
    assert http_line(r, "body", "n_gpu_layers") == expected
    assert mcp_line("check", {"model": "llama-3.1-8b", "n_gpu_layers": -3}) == expected


def test_a_kv_cache_the_engine_lacks(client):
    expected = as_field(cli_line("check", "llama-3.1-8b", "-r", "vllm", "--kv-cache", "q4_0"), "kv-cache", "kv_cache")
    r = client.get("/api/v1/check", params={"model": "llama-3.1-8b", "runtime": "vllm", "kv_cache": "q4_0"})
    assert http_line(r, "query", "kv_cache") == expected
    assert mcp_line("check", {"model": "llama-3.1-8b", "runtime": "vllm", "kv_cache": "q4_0"}) == expected


@pytest.mark.parametrize("budget", ["-5", "0.001", "1e12"])
def test_a_budget_out_of_bounds_is_the_clis_line(client, budget):
    """amounts.COST_BOUNDS: 0.01 … 1,000,000,000 USD for every caller; the HTTP query had its own gt=0, le=1e9."""
    expected = cli_line("best", "llama-3.1-8b", "--budget", budget)
    r = client.get("/api/v1/best", params={"model": "llama-3.1-8b", "budget": budget})
    assert http_line(r, "query", "budget") == expected
    assert mcp_line("best", {"model": "llama-3.1-8b", "budget": float(budget)}) == expected


def test_an_hours_amount_names_the_field_as_sent(client):
    expected = as_field(cli_line("cost", "llama-3.1-8b", "--gpu", "4090", "--hours-per-day", "30"), "hours-per-day",
                        "hours_per_day")
    r = client.get("/api/v1/cost", params={"model": "llama-3.1-8b", "gpu": "4090", "hours_per_day": "30"})
    assert http_line(r, "query", "hours_per_day") == expected
    assert mcp_line("cost", {"model": "llama-3.1-8b", "gpu": "4090", "hours_per_day": 30}) == expected


def test_a_json_1e30_context_is_one_line_on_mcp_as_on_http(client):
    """MCP had answered "ctx.str: input should be a valid string, got 1e+30; ctx.int: unable to parse …"."""
    expected = cli_line("check", "llama-3.1-8b", "--ctx", "1e+30")
    assert mcp_line("check", {"model": "llama-3.1-8b", "ctx": 1e30}) == expected
    r = client.post("/api/v1/check", content=json.dumps({"model": "llama-3.1-8b", "ctx": 1e30}),
                    headers={"content-type": "application/json"})
    assert http_line(r, "body", "ctx") == expected


def test_a_benchmark_quant_check_refuses_is_refused_in_checks_words(client):
    """POST /api/v1/benchmarks took "quant": "Q9_Z" (201), which check refuses."""
    expected = cli_line("check", "qwen3-8b", "--gpu", "rtx-4090", "--quant", "Q9_Z")
    body = {"device": "rtx-4090", "runtime": "llama.cpp", "model": "qwen3-8b", "quant": "Q9_Z",
            "decode_tokens_per_s": 50.0}
    assert http_line(client.post("/api/v1/benchmarks", json=body), "body", "quant") == expected


@pytest.mark.parametrize("users", ["0", "65"])
def test_best_users_out_of_bounds_is_the_clis_line_on_every_door(client, users):
    """fixes21c: HTTP and MCP answered pydantic's "Input should be less than or equal to 64" (the CLI had no upper
    bound, "must be at least 1 concurrent request" below it, and the site "expected 1 to 64"); now amounts.COST_BOUNDS
    bounds users for every caller, 1 to 64 whole requests."""
    expected = cli_line("best", "llama-3.1-8b", "--users", users)
    assert expected == f"users: must be a whole number of concurrent requests from 1 to 64, got {users}"
    r = client.get("/api/v1/best", params={"model": "llama-3.1-8b", "users": users})
    assert http_line(r, "query", "users") == expected
    assert mcp_line("best", {"model": "llama-3.1-8b", "users": int(users)}) == expected
    page = client.get("/best", params={"model": "llama-3.1-8b", "users": users})
    assert page.status_code == 422 and expected in " ".join(page.text.split())


def test_an_unknown_device_in_compare_gets_checks_did_you_mean_on_every_door(client):
    """review21 #10 / fixes21a's leftover: compare's unknown device was to lack check's did-you-mean. On this tree
    every door resolves compare's names with the catalog's find_device, as check does: the same line, with check's
    suggestions (the field is devices where check's is gpu)."""
    expected = cli_line("check", "qwen3-8b", "--gpu", "rtx-409")
    assert "did you mean: rtx-4090" in expected
    assert cli_line("compare", "rtx-4090", "rtx-409", "--model", "qwen3-8b") == expected
    r = client.get("/api/v1/compare", params={"devices": "rtx-4090,rtx-409", "model": "qwen3-8b"})
    # HTTP and MCP say the field before it (site23: the HTTP line had named it in loc only)
    assert http_line(r, "query", "devices") == f"devices: {expected}"
    assert mcp_line("compare", {"devices": ["rtx-4090", "rtx-409"], "model": "qwen3-8b"}) == f"devices: {expected}"
    page = client.get("/compare", params={"d": ["rtx-4090", "rtx-409"], "model": "qwen3-8b"})
    assert page.status_code == 422 and expected.replace("'", "&#39;") in " ".join(page.text.split())
