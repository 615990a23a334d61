"""Start the real app on loopback and a real headless Chromium (Debian's) driven by Playwright."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_path() -> str | None:
    """Debian's chromium; installed by the test run when missing and we are root (CI is)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=600)
    subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], env=env, capture_output=True, timeout=900)
    return shutil.which("chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_app(**create_app_args):
    """The app as `runlocal serve` builds it on 127.0.0.1, its Host check on (only loopback names pass), so a
    page that reaches the app under another Host fails in tests as it does for users. Clients use
    http://127.0.0.1 (TestClient's default host, "testserver", is refused as any other name is)."""
    from ..api.app import create_app
    from ..config import default_allowed_hosts

    return create_app(allowed_hosts=default_allowed_hosts("127.0.0.1"), **create_app_args)


@contextmanager
def running_app(app):
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


__all__ = ["chromium_path", "running_app", "served_app", "CHROMIUM_FLAGS", "sys"]
