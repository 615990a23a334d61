#!/usr/bin/env python3
"""How long llama.cpp's --fit over several GPUs takes to plan: review17c finding 2's cases, each a cold
`python -m runlocal …` process (what a user waits for), with the shipped compute table on and off
(RUNLOCAL_COMPUTE_TABLE=0: the planner alone; the table cannot hold --fit's arbitrary placements anyway).

Each row prints the wall time, the process's CPU time (what to compare on a loaded machine), the max context and the
launch line (-ngl, -ts, -ot), so two trees can be compared:

  PYTHONPATH=/path/to/tree/src python3 benchmarks/fit_multigpu.py [--table on|off|both] [--repeat N]

Timings depend on the machine's load: compare two trees in the same minute, on the same machine.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time

CASES = (
    ("check", "qwen3-235b-a22b", "--gpu", "4xrtx-3090"),
    ("check", "deepseek-v3", "--gpu", "4xrtx-3090", "--ctx", "8192"),
    ("check", "gpt-oss-120b", "--gpu", "2xarc-b580", "--ctx", "8192"),
    ("check", "glm-4.5-air", "--gpu", "2xrtx-3090"),
    ("best", "qwen3.6-35b-a3b", "--ctx", "32768"),
    ("best", "gpt-oss-120b"),
)


def run(args: tuple[str, ...], table: bool) -> tuple[float, float, str, str]:
    """(wall seconds, the process's CPU seconds, max context, launch line) of one cold process. The CPU time is what
    to compare on a shared machine: the wall time grows with the other processes' load."""
    env = {**os.environ, "RUNLOCAL_COMPUTE_TABLE": "1" if table else "0", "COLUMNS": "400"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "runlocal", *args], capture_output=True, text=True, env=env).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    ctx = re.search(r"max context ([\d,]+)", out)
    launch = re.search(r"run: (llama-server .*)", out)
    return wall, cpu, ctx.group(1) if ctx else "-", launch.group(1) if launch else "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", choices=("on", "off", "both"), default="both")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    for table in {"on": (True,), "off": (False,), "both": (True, False)}[a.table]:
        for case in CASES:
            for _ in range(a.repeat):
                wall, cpu, ctx, launch = run(case, table)
                print(f"table {'on ' if table else 'off'} {wall:6.2f} s  cpu {cpu:6.2f} s  max ctx {ctx:>8}  "
                      f"{' '.join(case)}  |  {launch}", flush=True)


if __name__ == "__main__":
    main()
