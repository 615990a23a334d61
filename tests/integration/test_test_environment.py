"""The test run's environment: the calling shell's RUNLOCAL_* variables do not reach the tests (tests/conftest.py
pytest_configure), so a developer who exported their own server's RUNLOCAL_DB_URL or tokens runs the suite against a
throw-away home, not that server (review23 #11)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INNER = "TEST_ENV_ISOLATION_INNER"      # not a RUNLOCAL_* name: it must survive the set-aside to mark the inner run
SHELL = {
    "RUNLOCAL_DB_URL": "postgresql+psycopg://u@db.example/bench",   # a developer's own server
    "RUNLOCAL_ADMIN_TOKEN": "the-shells-admin-token",
    "RUNLOCAL_SUBMITTER_TOKENS": "shell-a,shell-b",
    "RUNLOCAL_DEBUG": "1",
    "RUNLOCAL_COMPUTE_TABLE": "0",       # kept (conftest.SHELL_KEPT): it changes no answer
}


@pytest.mark.skipif(os.environ.get(INNER) != "1", reason="run by test_the_shells_runlocal_variables_are_set_aside")
def test_inner_sees_none_of_the_shells_variables() -> None:
    from runlocal import config

    assert config.store_url() is None and config.admin_token() is None and config.submitter_tokens() == []
    assert "RUNLOCAL_DEBUG" not in os.environ
    assert config.data_dir().name.startswith("runlocal-test-home-")
    assert os.environ.get("RUNLOCAL_COMPUTE_TABLE") == "0"


def test_the_shells_runlocal_variables_are_set_aside() -> None:
    env = {**os.environ, **SHELL, INNER: "1", "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider",
                          f"{Path(__file__).relative_to(ROOT)}::test_inner_sees_none_of_the_shells_variables"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
