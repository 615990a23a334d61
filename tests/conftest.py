"""Markers by kind, and ``slow`` for what takes over a second, so ``pytest -m "not slow"`` is the quick loop.

Kinds (one marker each, registered in pyproject.toml): ``unit`` (in-process, no recorded evidence),
``accuracy`` (the planners against recorded runs, public logs and the real libraries' own tables),
``integration`` (real processes, servers, databases) and ``browser`` (a real headless Chromium). A test file's
kind is its folder (tests/unit/, tests/accuracy/, …) or, for a file still at the top of tests/, ``KIND_OF``.
Accuracy, integration and browser tests are all ``slow``; so is any other test whose recorded duration
(tests/durations.json, written by ``pytest --write-durations``) is over ``SLOW_S``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pgserver"]      # the PostgreSQL cluster and the store_url fixture of the store tests

HERE = Path(__file__).resolve().parent
DURATIONS = HERE / "durations.json"
SLOW_S = 1.0
KINDS = ("unit", "accuracy", "integration", "browser")
SLOW_KINDS = {"accuracy", "integration", "browser"}
# Files not yet in a folder of their kind (/work/wt/_notes/structure-testmoves.sh moves them); unlisted: unit.
KIND_OF = {
    "test_catalog_data.py": "accuracy", "test_commands_as_pasted.py": "accuracy",
    "test_diagnose_signals.py": "accuracy", "test_ggml_graph.py": "accuracy",
    "test_ggml_types.py": "accuracy", "test_gguf_mix.py": "accuracy", "test_gguf_mla.py": "accuracy",
    "test_gguf_names_table.py": "accuracy", "test_gguf_table.py": "accuracy", "test_hf_config.py": "accuracy",
    "test_llamacpp_accuracy.py": "accuracy", "test_llamacpp_buffers.py": "accuracy",
    "test_llamacpp_swa_real.py": "accuracy", "test_public_logs.py": "accuracy", "test_quant_formats.py": "accuracy",
    "test_runtime_sglang_logs.py": "accuracy", "test_runtime_vllm.py": "accuracy", "test_seed_scenarios.py": "accuracy",
    "test_speed.py": "accuracy",
    "test_answers_as_read.py": "integration", "test_api_safety.py": "integration",
    "test_api_schemathesis.py": "integration", "test_cli.py": "integration", "test_harness.py": "integration",
    "test_light_imports.py": "integration", "test_lint.py": "integration", "test_mcp.py": "integration",
    "test_measured.py": "integration", "test_probe_faults.py": "integration", "test_probe_llamacpp.py": "integration",
    "test_remote_gguf.py": "integration", "test_store.py": "integration", "test_store_api.py": "integration",
    "test_store_cli.py": "integration", "test_store_fuzz.py": "integration",
    "test_web_browser.py": "browser",
}


def kind_of(path: Path) -> str:
    """The folder's kind (tests/<kind>/…), else the table's, else unit."""
    parent = path.parent.name
    return parent if parent in KINDS else KIND_OF.get(path.name, "unit")


def duration_key(path: Path | str, nodeid: str) -> str:
    """file name :: test (class, name, parameters): the same before and after a file moves to its kind's folder."""
    return f"{Path(path).name}::{nodeid.split('::', 1)[-1]}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--write-durations", action="store_true",
                     help=f"record each test's setup + call time into {DURATIONS.name} (the slow marker reads it)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    recorded = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}
    for item in items:
        kind = kind_of(item.path)
        item.add_marker(getattr(pytest.mark, kind))
        if kind in SLOW_KINDS or recorded.get(duration_key(item.path, item.nodeid), 0.0) > SLOW_S:
            item.add_marker(pytest.mark.slow)


_DURATIONS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call"):
        key = duration_key(report.fspath, report.nodeid)
        _DURATIONS[key] = _DURATIONS.get(key, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not session.config.getoption("--write-durations") or not _DURATIONS:
        return
    old = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}
    merged = {**old, **{k: round(v, 3) for k, v in _DURATIONS.items()}}
    DURATIONS.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n", encoding="utf-8")
