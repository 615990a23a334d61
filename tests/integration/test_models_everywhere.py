"""`runlocal models` has one contract (request.ModelsRequest) and one answer (fits_here.models_answer): the CLI's
--json, GET /api/v1/models and the MCP models tool give the same rows for the same request, and bad input is a 4xx
(the CLI: exit 2) naming the field. review19 #13: the API took only ``q`` and refused ``fits`` and ``gpu``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.asking import offline_process_env

SRC = str(Path(__file__).resolve().parents[2] / "src")
GIB = 1 << 30

# (the request's fields, the same on the command line)
REQUESTS = [
    ({"fits": True, "gpu": "rtx-4090", "ctx": "32k"}, ["--fits", "--gpu", "rtx-4090", "--ctx", "32k"]),
    ({"fits": True, "gpu": "2x3090", "ram": "64G"}, ["--fits", "--gpu", "2x3090", "--ram", "64G"]),
    ({"fits": True, "vram": "12G", "ctx": 8192}, ["--fits", "--vram", "12G", "--ctx", "8192"]),
    ({"query": "qwen3"}, ["--query", "qwen3"]),
]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return offline_process_env(tmp_path_factory.mktemp("home"), SRC)


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    db = tmp_path_factory.mktemp("api") / "b.sqlite3"
    with TestClient(create_app(store_url=f"sqlite:///{db}")) as client:
        yield client


def _cli(env, argv):
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "models", *argv, "--json"], capture_output=True,
                       text=True, env=env, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _mcp(requests):
    from mcp import Client

    from runlocal.mcp_server import ReadPolicy, build_server

    async def work():
        async with Client(build_server(ReadPolicy(open=True))) as client:
            return [await client.call_tool("models", args) for args in requests]

    return anyio.run(work)


def test_cli_api_and_mcp_give_the_same_rows(env, api, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tool_answers = _mcp([args for args, _ in REQUESTS])
    for (args, argv), tool in zip(REQUESTS, tool_answers, strict=True):
        cli = _cli(env, argv)
        r = api.get("/api/v1/models", params={k: str(v).lower() if isinstance(v, bool) else v
                                              for k, v in args.items()})
        assert r.status_code == 200, r.text
        assert not tool.is_error, tool.content[0].text
        assert r.json() == cli, args
        assert json.loads(tool.content[0].text) == cli, args
        if args.get("fits"):
            assert len(cli["models"]) >= 10, args          # a list, not an empty answer that agrees
            # independent of the sweep: no row peaks above the memory the request named
            assert all(row["peak_bytes"] <= cli["capacity_bytes"] for row in cli["models"])
        else:
            assert cli and all("qwen3" in row["alias"] or "qwen3" in row["repo_id"].lower() for row in cli)
    # --vram 12G: the capacity is the figure given, 12 × 2^30 = 12,884,901,888 B, at the context asked
    vram = _cli(env, REQUESTS[2][1])
    assert vram["capacity_bytes"] == 12_884_901_888 and vram["ctx"] == 8192


def test_the_api_keeps_q_as_the_name_of_query(api):
    by_q = api.get("/api/v1/models", params={"q": "llama"}).json()
    assert by_q == api.get("/api/v1/models", params={"query": "llama"}).json()
    assert by_q and all("llama" in row["alias"] or "llama" in row["repo_id"].lower() for row in by_q)


# bad input: (query parameters, the field the answer must name)
BAD = [
    ({"fits": "true", "gpu": "rtx-4090", "ctx": "abc"}, "ctx"),
    ({"fits": "true", "gpu": "rtx-4090", "ctx": "0"}, "ctx"),
    ({"fits": "maybe"}, "fits"),
    ({"fits": "true", "gpu": "no-such-gpu-xyz"}, "gpu"),
    ({"fits": "true", "vram": "-5"}, "vram"),
    ({"fits": "true", "gpu": "none", "ram": "lots"}, "ram"),
    ({"fits": "true", "query": "qwen"}, "query"),
    ({"gpu": "rtx-4090"}, "gpu"),                         # gpu without fits: refused, not ignored
    ({"q": "a", "query": "b"}, "query"),
    ({"fits": "true", "gpu": ""}, "gpu"),
    ({"top": "3"}, "top"),                                # the CLI's table option is no query parameter
    ({"query": "x" * 101}, "query"),
]


@pytest.mark.parametrize(("params", "field"), BAD, ids=[f for _, f in BAD])
def test_bad_input_is_a_422_naming_the_field(api, params, field):
    r = api.get("/api/v1/models", params=params)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail[0]["loc"] == ["query", field], detail
    assert "Traceback" not in r.text


@pytest.mark.parametrize(("argv", "field"), [(["--fits", "--gpu", "rtx-4090", "--ctx", "abc"], "ctx"),
                                             (["--gpu", "rtx-4090"], "gpu"),
                                             (["--fits", "--vram", "-5"], "vram")])
def test_the_cli_refuses_the_same_input_in_one_line(env, argv, field):
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "models", *argv], capture_output=True, text=True,
                       env=env, timeout=120, check=False)
    assert r.returncode == 2 and r.stderr.startswith(f"error: {field}: "), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_models_page_links_to_its_own_rows_as_json(api):
    """The site's filter and the API's are one (catalog.matching): "llama3" finds llama-3-8b by its other name
    llama3-8b (data/models: its aliases), which no alias or repo id spells."""
    import re

    html = api.get("/models", params={"q": "Llama3"}).text
    link = re.search(r'href="(/api/v1/models[^"]*)"', html).group(1).replace("&amp;", "&")
    assert link == "/api/v1/models?q=llama3"
    on_page = re.findall(r'<th scope="row" data-label="Model"><a href="/models/([^"]+)"', html)
    assert "llama-3-8b" in on_page
    assert on_page == [row["alias"] for row in api.get(link).json()]
