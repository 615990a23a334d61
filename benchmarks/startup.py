"""`runlocal check <alias> --json` as a fresh process: median wall time over repeated runs.

Timed as users start it — the `runlocal` entry point (`python -m runlocal`, cli_check.main: a plain `check` line is
read without Typer) — and, beside it, through the Typer app (`python -m runlocal.cli`), with the CPU time of each; and
`runlocal check <alias> --json` without --gpu, which detects this machine first (NVML, amdsmi/rocm-smi, sysctl, RAM).

Target: median ≤ 0.2 s on a 2-core machine (issue 16; heavy imports — numpy, gguf, pydantic, sqlalchemy,
huggingface_hub, transformers — stay lazy on this path), printed beside `python3 -c pass` measured in the same run,
so a busy machine shows as a ratio, and how many of runlocal's modules lack current bytecode: with PYTHONDONTWRITEBYTECODE
set (or a read-only tree) those are compiled again at every start — 75 of 234 modules in a tree whose __pycache__
predates the session's edits cost ~70 ms of CPU per check (session 20); a pip install compiles them all
(`python -m compileall -q src` does so for a checkout).   Run: python benchmarks/startup.py [alias] [runs]
(benchmarks/planning.py times the whole grid of models × runtimes × contexts.)
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh process: the CPU figure is less moved by other processes' turns."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def stale_bytecode() -> tuple[int, int]:
    """(modules whose bytecode is missing or older than their source, modules) over the whole runlocal package the
    timed commands import from, as importlib checks it (a pyc's header holds its source's mtime and size, PEP 552)."""
    spec = importlib.util.find_spec("runlocal")
    assert spec is not None and spec.origin is not None
    sources = sorted(Path(spec.origin).parent.rglob("*.py"))
    stale = 0
    for py in sources:
        pyc = Path(importlib.util.cache_from_source(str(py)))
        head = pyc.read_bytes()[:16] if pyc.is_file() else b""
        st = py.stat()
        # flags 0: checked by timestamp; a hash-based pyc (flags ≠ 0) is taken as current
        stale += len(head) < 16 or (struct.unpack("<I", head[4:8])[0] == 0 and struct.unpack("<II", head[8:16])
                                    != (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF))
    return stale, len(sources)


def main() -> None:
    alias = sys.argv[1] if len(sys.argv) > 1 else "llama-3.1-8b"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    question = ["check", alias, "--gpu", "rtx-4090", "--ctx", "8192", "--json"]
    entries = {"runlocal": [sys.executable, "-m", "runlocal", *question],
               "runlocal.cli (Typer)": [sys.executable, "-m", "runlocal.cli", *question],
               # what a user types first: no --gpu, so this machine's GPUs and RAM are detected (hardware/detect.py),
               # at the default context (the longest-context search runs)
               "runlocal, detected": [sys.executable, "-m", "runlocal", "check", alias, "--json"]}
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for cmd in entries.values():
        subprocess.run(cmd, check=True, capture_output=True, env=env)      # warm the OS file cache once
    timed: dict[str, list[tuple[float, float]]] = {"python3 -c pass": [], **{k: [] for k in entries}}
    for _ in range(runs):                        # interleaved, so a busy minute weighs on each alike
        timed["python3 -c pass"].append(_timed([sys.executable, "-c", "pass"], env))
        for label, cmd in entries.items():
            timed[label].append(_timed(cmd, env))
    bare = statistics.median(w for w, _ in timed["python3 -c pass"])
    print(f"command        {' '.join(question)}   runs {runs}   ('runlocal, detected': check {alias} --json)")
    for label, pairs in timed.items():
        walls = [w for w, _ in pairs]
        med = statistics.median(walls)
        print(f"{label:<22} median {med * 1000:5.0f} ms (min {min(walls) * 1000:.0f}, max {max(walls) * 1000:.0f}), "
              f"CPU {statistics.median(c for _, c in pairs) * 1000:.0f} ms, {med / bare:.1f}× python3 -c pass")
    stale, modules = stale_bytecode()
    unwritten = " (compiled again at each start: PYTHONDONTWRITEBYTECODE is set)" if (
        stale and os.environ.get("PYTHONDONTWRITEBYTECODE")) else ""
    print(f"bytecode: {stale} of {modules} runlocal modules without current bytecode{unwritten}")
    for label in ("runlocal", "runlocal, detected"):
        med = statistics.median(w for w, _ in timed[label])
        print(f"target ≤ 200 ms (`{label}`): {'PASS' if med <= 0.2 else 'FAIL'}")


if __name__ == "__main__":
    main()
