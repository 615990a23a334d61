"""A user's `runlocal …` as the tests ask it: in-process through the CLI's request or its typer app, or as a process.

`run_cli` answers in this process, through the same typer app the installed command runs: the exit code, stdout and
stderr a user reads, without starting an interpreter (0.3 s of CPU each on 2 cores: most of the quick set's time when
every CLI test started one). tests/integration/test_cli.py and the hostile-file tests run the command as a process.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Mapping
from unittest import mock

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


def run_cli(*args: str, stdin: str | bytes | None = None, env: Mapping[str, str | None] | None = None,
            text: bool = True) -> subprocess.CompletedProcess:
    """`runlocal ARGS` answered by the CLI's typer app in this process, as `python -m runlocal.cli ARGS` with
    HF_HUB_OFFLINE=1 and COLUMNS=120 would answer it (``env`` adds or, with None, removes variables for the call;
    RUNLOCAL_DEBUG is unset). An exception the CLI lets escape is raised here: the test fails, as the traceback a
    process would print fails it. stdout and stderr are str, or bytes with ``text=False``."""
    from huggingface_hub import constants
    from typer.testing import CliRunner

    from runlocal.cli import app

    env = {"HF_HUB_OFFLINE": "1", "COLUMNS": "120", "RUNLOCAL_DEBUG": None, **(env or {})}
    # huggingface_hub reads HF_HUB_OFFLINE once, at import: the module's flag is what its calls (and runlocal's) read
    with mock.patch.object(constants, "HF_HUB_OFFLINE", env["HF_HUB_OFFLINE"] == "1"):
        r = CliRunner().invoke(app, list(args), input=stdin, env=env, catch_exceptions=False)
    if text:
        return subprocess.CompletedProcess(["runlocal", *args], r.exit_code, r.stdout, r.stderr)
    return subprocess.CompletedProcess(["runlocal", *args], r.exit_code, r.stdout_bytes, r.stderr_bytes)


def check_json(*args: str) -> dict:
    """`runlocal check ARGS --json`, offline, through the CLI (`run_cli`); its plan (exit 0 or 1: a verdict, not an
    error)."""
    r = run_cli("check", *args, "--json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


# runtime variables a user's shell may hold that would change a subprocess's answer
_RUNTIME_VARIABLES = ("RUNLOCAL_DEBUG", "RUNLOCAL_DB_URL", "OLLAMA_NUM_PARALLEL", "OLLAMA_KV_CACHE_TYPE",
                      "OLLAMA_FLASH_ATTENTION", "OLLAMA_CONTEXT_LENGTH", "OLLAMA_GPU_OVERHEAD")


def offline_process_env(home, src: str) -> dict[str, str]:
    """The environment a `runlocal` / `runlocal mcp` subprocess test runs in: offline, a benchmark store of its own
    under ``home`` (so the CLI and a server see the same, no, measurements), this tree's ``src`` first, none of the
    runtime variables above."""
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RUNLOCAL_HOME": str(home), "PYTHONPATH": src, "COLUMNS": "120"}
    for name in _RUNTIME_VARIABLES:
        env.pop(name, None)
    return env
