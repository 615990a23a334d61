"""`runlocal check … -r <named build> --json` as a fresh process, with the compute table on and off (review17 finding 8).

A named build (-r llama.cpp==bN, -r ollama==X.Y.Z) simulates its compute buffers with its own rules; the shipped table
(runtimes/compute_table.py) answers them only where compute_table_build asked that rule set's questions
(compute_table_build.pinned_rule_sets: the default context on an RTX 4090 and an RTX 3060). For each of review17's
commands (and the current build beside them) this prints the median wall and CPU seconds of a fresh process with the
table on and with it off (RUNLOCAL_COMPUTE_TABLE=0), and whether the two JSON answers are the same (the table may make
a plan faster, never different). Timed on a shared machine: `python3 -c pass` is printed as the yardstick.
    Run: python benchmarks/named_builds.py [runs]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

COMMANDS = (   # review17 finding 8's table, and the current builds beside two of them
    ("gpt-oss-120b", "rtx-4090", "64G", "ollama==0.12.0"),
    ("gpt-oss-120b", "rtx-4090", "64G", "ollama"),
    ("gpt-oss-20b", "rtx-3060", None, "ollama==0.12.5"),
    ("gpt-oss-120b", "rtx-4090", "64G", "llama.cpp==b6500"),
    ("gpt-oss-120b", "rtx-4090", "64G", "llama.cpp"),
    ("qwen3-30b-a3b", "rtx-3060", "64G", "ollama==0.12.0"),
    ("qwen3-30b-a3b", "rtx-3060", "64G", "llama.cpp==b5000"),
)


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall, CPU seconds, stdout) of one fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc.stdout.read().decode() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, out


def _answer(text: str) -> dict:
    doc = json.loads(text)
    doc.pop("notes", None)        # the same either way; dropped only so that a difference elsewhere is what shows
    return doc


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    base = dict(os.environ)
    idle = statistics.median(_run([sys.executable, "-c", "pass"], base)[0] for _ in range(5))
    print(f"python3 -c pass: {idle:.3f} s (load average {os.getloadavg()[0]:.1f})")
    print(f"{'command':<62} {'table on':>16} {'table off':>16}  same answer")
    for alias, gpu, ram, runtime in COMMANDS:
        cmd = [sys.executable, "-m", "runlocal", "check", alias, "--gpu", gpu, *(["--ram", ram] if ram else []),
               "-r", runtime, "--json"]
        got = {}
        for label, table in (("on", "1"), ("off", "0")):
            times = [_run(cmd, {**base, "RUNLOCAL_COMPUTE_TABLE": table}) for _ in range(runs)]
            got[label] = (statistics.median(t[0] for t in times), statistics.median(t[1] for t in times),
                          _answer(times[0][2]))
        same = got["on"][2] == got["off"][2]
        text = f"{alias} --gpu {gpu}" + (f" --ram {ram}" if ram else "") + f" -r {runtime}"
        print(f"{text:<62} {got['on'][0]:6.2f} s ({got['on'][1]:4.2f} CPU) {got['off'][0]:6.2f} s "
              f"({got['off'][1]:4.2f} CPU)  {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
