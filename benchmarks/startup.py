"""`runlocal check <alias> --json` as a fresh process: median wall time over repeated runs.

Target: median ≤ 0.3 s on a 2-core machine (heavy imports — numpy, gguf, huggingface_hub,
transformers — must stay lazy on this path).   Run: python benchmarks/startup.py [alias] [runs]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    alias = sys.argv[1] if len(sys.argv) > 1 else "llama-3.1-8b"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    cmd = [sys.executable, "-m", "runlocal.cli", "check", alias, "--gpu", "rtx-4090", "--ctx", "8192", "--json"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run(cmd, check=True, capture_output=True, env=env)      # warm the OS file cache once
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"command        {' '.join(cmd[2:])}")
    print(f"runs           {runs}")
    print(f"median         {med * 1000:.0f} ms   (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})")
    print(f"target ≤ 300 ms: {'PASS' if med <= 0.3 else 'FAIL'}")


if __name__ == "__main__":
    main()
