"""ruff and mypy, as configured in pyproject.toml, are clean: the README's test command runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
while not (ROOT / "pyproject.toml").is_file():      # the same after this file moves into tests/<kind>/
    ROOT = ROOT.parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT, timeout=900)


def test_ruff_is_clean():
    if _run("ruff", "--version").returncode:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    out = _run("ruff", "check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_mypy_is_clean():
    if _run("mypy", "--version").returncode:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    out = _run("mypy", "--config-file", "pyproject.toml")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
