"""`runlocal serve` as a child process on a free loopback port, for the benchmarks that load it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from .browser import free_port

__all__ = ["free_port", "start_serve"]


def start_serve(port: int, home: str, *args: str, timeout_s: float = 60.0) -> subprocess.Popen:
    """Start `runlocal serve --port PORT ARGS…` offline with its own RUNLOCAL_HOME (no store URL from the caller's
    environment) and return once it answers; SystemExit when it does not within ``timeout_s``."""
    import httpx

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RUNLOCAL_HOME": home}
    env.pop("RUNLOCAL_DB_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "runlocal.cli", "serve", "--port", str(port), *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v1/runtimes", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not start")
