"""Starting real servers on loopback for tests: a free port, and a process that answers HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60.0) -> bool:
    """True once ``url`` answers 200, False if it does not within ``timeout`` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            time.sleep(0.2)
    return False


@contextmanager
def runlocal_serve(env: dict[str, str], *extra: str):
    """`runlocal serve` in a child process; yields (base URL, process)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "runlocal.cli", "serve", "--port", str(port), *extra], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        if not wait_http(base + "/api/v1/runtimes", 30):
            raise RuntimeError("runlocal serve did not start")
        yield base, proc
    finally:
        proc.kill()
        proc.wait(timeout=20)
