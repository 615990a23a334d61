"""One Plan, one JSON answer: `runlocal check --json`, GET /api/v1/check and the MCP check tool return the same
document for the same request — the plan's contract and the notes the text output prints under it (how the name was
read, what RAM was assumed, which sizes a UD-* name was planned as). Before, the API carried the notes and the CLI's
--json and MCP dropped them. The independent check is the text output itself: every note it prints is in the JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.asking import offline_process_env

SRC = str(Path(__file__).resolve().parents[2] / "src")
# a pull name (read as a catalog model: a note), no RAM given (assumed: a note), an Unsloth name (sized as its base)
ASK = {"model": "qwen3:latest", "gpu": "rtx-4090", "quant": "UD-Q4_K_XL"}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return offline_process_env(tmp_path_factory.mktemp("home"), SRC)


def _cli(env, *extra):
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", ASK["model"], "--gpu", ASK["gpu"], "--quant",
                        ASK["quant"], *extra], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_cli_json_and_the_api_answer_are_one_document(env, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    cli = json.loads(_cli(env, "--json"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'api.sqlite3'}")) as client:
        r = client.get("/api/v1/check", params=ASK)
    assert r.status_code == 200, r.text
    api = r.json()
    assert set(cli) == set(api)
    assert cli["notes"] == api["notes"] and len(cli["notes"]) >= 2
    assert cli == api
    # the text output's notes are the JSON's (the text wraps lines: compare with whitespace folded)
    text = " ".join(_cli(env).split())
    # (a cited source's address is --explain's and --json's, not the first screen's: catalog.without_cited_sources)
    from runlocal.hardware.catalog import without_cited_sources
    for note in cli["notes"]:
        assert " ".join(without_cited_sources(note).split()) in text, note


def test_the_mcp_check_tool_carries_the_notes_too():
    from runlocal.check import CheckRequest, check, check_document
    from runlocal.mcp_server import check_doc

    doc = check_doc(dict(ASK))
    plan, notes = check(CheckRequest(**ASK))
    assert doc["notes"] == notes and doc == check_document(plan, notes)
