"""`runlocal check … | head -1`: the reader closes the pipe early. That is no error of the user's input: the command
ends quietly with 141 (128 + SIGPIPE), the status a shell gives `yes | head -1`, never a traceback, never 1 (which
rich's own broken-pipe handler exited with)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def into_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """`python -m runlocal ARGS` (the installed `runlocal` script's own main) writing into a pipe whose reader has
    already gone: the first write fails with EPIPE, whatever the output's size (no race with a pipe buffer)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "runlocal", *args], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, env=ENV, timeout=300)
    finally:
        os.close(write_end)


def test_check_into_a_closed_pipe_exits_141_without_a_word():
    # the text answer (rich), the JSON answer (print) and a command line the Typer app parses (--gpu=…)
    for args in (("check", "qwen3-8b", "--gpu", "rtx 3090"), ("check", "qwen3-8b", "--gpu", "rtx 3090", "--json"),
                 ("check", "qwen3-8b", "--gpu=rtx 3090", "--explain")):
        r = into_closed_pipe(*args)
        assert r.returncode == 128 + signal.SIGPIPE == 141, (args, r.returncode, r.stderr)
        assert r.stderr == "", (args, r.stderr)


def test_head_minus_one_gets_its_line_and_the_shell_sees_141():
    # the shell pipeline the report came from; --explain's answer is long enough to outlast head's one line
    cmd = (f"{sys.executable} -m runlocal check qwen3-8b --gpu 'rtx 3090' --explain | head -1; "
           "echo \"status=${PIPESTATUS[0]}\"")
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=ENV, timeout=300)
    first, status = r.stdout.splitlines()
    assert "qwen3-8b" in first and status in ("status=141", "status=0"), r.stdout   # 0 only if all of it fit the pipe
    assert "Traceback" not in r.stderr and r.stderr == "", r.stderr
