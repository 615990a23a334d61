"""review21 #12: help(CheckRequest) describes every field, from the option table that also writes the CLI's --help,
the OpenAPI descriptions and the MCP tool schema (it showed a 45-parameter signature and no word about a field;
nine options had no description anywhere)."""

from __future__ import annotations

import dataclasses
import pydoc
import re

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from runlocal.api.app import create_app
from runlocal.cli import app as cli
from runlocal.mcp_server import build_arg_models
from runlocal.request import CheckRequest, ModelsRequest


def test_help_describes_every_field():
    for request in (CheckRequest, ModelsRequest):
        text = pydoc.render_doc(request)
        for f in dataclasses.fields(request):
            m = re.search(rf"^\s*\|?\s+{f.name}: (.+)$", text, re.M)
            assert m and "(no description)" not in m.group(1) and len(m.group(1)) > 20, (request.__name__, f.name)


def test_the_same_words_reach_the_cli_openapi_and_mcp():
    """The words help() gives --gpu-memory-utilization are the ones `runlocal check --help` prints (read through the
    CLI), and every field of the HTTP body and of the MCP check tool has a description."""
    out = " ".join(CliRunner().invoke(cli, ["check", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "share of each GPU's memory the engine may use" in out
    assert "share of each GPU's memory the engine may use" in (CheckRequest.__doc__ or "")
    body = TestClient(create_app(cors_origins=[])).get("/openapi.json").json()["components"]["schemas"]["CheckBody"]
    assert all(p.get("description") for p in body["properties"].values()), \
        [n for n, p in body["properties"].items() if not p.get("description")]
    tool = build_arg_models()["check"].model_json_schema()
    assert all(p.get("description") for p in tool["properties"].values()), \
        [n for n, p in tool["properties"].items() if not p.get("description")]
