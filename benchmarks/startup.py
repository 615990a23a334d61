"""`runlocal check <alias> --json` as a fresh process: median wall time over repeated runs.

Target: median ≤ 0.2 s on a 2-core machine (issue 16; heavy imports — numpy, gguf, pydantic, sqlalchemy,
huggingface_hub, transformers — stay lazy on this path), printed beside `python3 -c pass` measured in the same run,
so a busy machine shows as a ratio.   Run: python benchmarks/startup.py [alias] [runs]
(benchmarks/planning.py times the whole grid of models × runtimes × contexts.)
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
    times, bare = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
        bare.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"command        {' '.join(cmd[2:])}")
    print(f"runs           {runs}")
    print(f"median         {med * 1000:.0f} ms   (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})")
    print(f"python3 -c pass {statistics.median(bare) * 1000:.0f} ms median in the same run: check is "
          f"{med / statistics.median(bare):.1f}× it")
    print(f"target ≤ 200 ms: {'PASS' if med <= 0.2 else 'FAIL'}")


if __name__ == "__main__":
    main()
