"""No runtime given and `--runtime llama.cpp` are two requests (policy17): the request contract carries "not given"
(CheckRequest.runtime None), resolved to llama.cpp in one place (request.runtime_name), so an Ollama library tag with
no runtime plans Ollama — `ollama run gpt-oss:20b` is how that name is run (https://ollama.com/library/gpt-oss/tags) —
while the same tag with llama.cpp asked for plans llama.cpp. Asked on each surface: the CLI (no flag), the HTTP API
(the field omitted; TestClient as a context manager, so the app's lifespan runs) and the MCP check tool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.asking import offline_process_env

SRC = str(Path(__file__).resolve().parents[2] / "src")
TAG = "gpt-oss:20b"
WHERE = {"gpu": "rtx-4090", "ram": "64G"}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return offline_process_env(tmp_path_factory.mktemp("home"), SRC)


def test_the_cli_tells_no_flag_from_runtime_llamacpp(env):
    def runtime(*extra):
        r = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", TAG, "--gpu", WHERE["gpu"], "--ram",
                            WHERE["ram"], *extra, "--json"], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["runtime"]

    assert runtime() == "ollama"
    assert runtime("--runtime", "llama.cpp") == "llama.cpp"
    assert runtime("-r", "llama.cpp") == "llama.cpp"


def test_the_api_tells_an_omitted_field_from_llamacpp(env, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'api.sqlite3'}")) as client:
        def runtime(method, **extra):
            body = {"model": TAG, **WHERE, **extra}
            r = (client.post("/api/v1/check", json=body) if method == "post"
                 else client.get("/api/v1/check", params=body))
            assert r.status_code == 200, r.text
            return r.json()["runtime"]

        for method in ("post", "get"):
            assert runtime(method) == "ollama"
            assert runtime(method, runtime="llama.cpp") == "llama.cpp"
        # the schema says the field may be left out, and that leaving it out is not the same as "llama.cpp"
        schema = client.get("/openapi.json").json()["components"]["schemas"]["CheckBody"]
        assert "runtime" not in schema.get("required", []) and schema["properties"]["runtime"].get("default") is None
        # an explicit null is "not given" too; a bad name is a 422 naming the field
        assert client.post("/api/v1/check", json={"model": TAG, **WHERE, "runtime": None}).json()["runtime"] == "ollama"
        bad = client.post("/api/v1/check", json={"model": TAG, **WHERE, "runtime": "nosuch"})
        assert bad.status_code == 422 and "runtime" in bad.text


def test_the_mcp_check_tool_tells_an_omitted_argument_from_llamacpp(env):
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "runlocal.cli", "mcp"], env=env)

    async def main():
        async with Client(params, read_timeout_seconds=300) as client:
            omitted = await client.call_tool("check", {"model": TAG, **WHERE})
            asked = await client.call_tool("check", {"model": TAG, **WHERE, "runtime": "llama.cpp"})
            return [json.loads(r.content[0].text)["runtime"] for r in (omitted, asked)]

    assert anyio.run(main) == ["ollama", "llama.cpp"]
