"""A user's `runlocal check …` as the tests ask it: in-process through the CLI's request, or as a process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

from runlocal.check import CheckRequest, check


def ask(command: str):
    """`runlocal check …` as typed → (plan, notes), through the same request the CLI builds."""
    words = shlex.split(command)
    assert words[:2] == ["runlocal", "check"]
    opts: dict = {"model": words[2], "use_measurements": False}
    it = iter(words[3:])
    for flag in it:
        key, value = flag.lstrip("-").replace("-", "_"), next(it)
        opts[key] = int(value) if key in ("parallel", "tp", "pp") else value     # as typer types them
    return check(CheckRequest(**opts))


def check_json(*args: str) -> dict:
    """`runlocal check ARGS --json` as a fresh process, offline; its plan (exit 0 or 1: a verdict, not an error)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", *args, "--json"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)
