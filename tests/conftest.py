"""Markers by kind, and ``slow`` for what takes over a second, so ``pytest -m "not slow"`` is the quick loop.

Kinds (one marker each, registered in pyproject.toml): ``unit`` (in-process, no recorded evidence),
``accuracy`` (the planners against recorded runs, public logs and the real libraries' own tables),
``integration`` (real processes, servers, databases) and ``browser`` (a real headless Chromium). A test file's
kind is its folder (tests/unit/, tests/accuracy/, tests/integration/, tests/browser/).
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


def kind_of(path: Path) -> str:
    """The folder's kind (tests/<kind>/…); a test file outside those folders counts as unit."""
    parent = path.parent.name
    return parent if parent in KINDS else "unit"


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
