"""Helpers for the server scenarios: the server's import footprint, starting it and waiting for it."""
import subprocess
import sys
import time
import urllib.request

from _common import ENV


def server_vm_kib() -> int:
    """VmSize (KiB) of a Python that has imported llama_cpp's server app: the base a `ulimit -v` is set above."""
    code = ("import llama_cpp.server.app, uvicorn\n"
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmSize')][0])")
    return int(subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                              timeout=120).stdout.strip()) + 64 * 1024   # + 64 MiB for uvicorn's threads


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 90) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return True
        except Exception:
            time.sleep(0.5)
    return False
