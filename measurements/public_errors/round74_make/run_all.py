"""Run round 73's scenarios (produce23b) and write next/round74_pages.jsonl: each scenario's user command runs in a neutral
folder /tmp/r74/run-<8 hex>, stdout and stderr merged, and its last 40 lines (trailing blanks dropped) are its text.
Usage: PYTHONPATH=$PWD/src python3 measurements/public_errors/round74_make/run_all.py [scenario ...]"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT = HERE.parent / "next" / "round74_pages.jsonl"
CG = Path("/sys/fs/cgroup/memory/c74_run")
PIDS = Path("/sys/fs/cgroup/pids/c74_run")
NB = '''import json, sys
from IPython.core.interactiveshell import InteractiveShell
sh = InteractiveShell.instance(colors="NoColor")
for cell in json.load(open("cells.json")):
    if not sh.run_cell(cell, store_history=True).success:
        sys.exit(1)
'''
VERSION = {"llamacpp": "produced here: llama-cpp-python 0.3.36 (its vendored llama.cpp), CPU backend",
           "transformers": "produced here: transformers 5.24.0, torch 2.13.0+cpu, CPU",
           "huggingface_hub": "produced here: huggingface_hub 2.4.0, offline",
           "numpy": "produced here: numpy 2.4.6, CPU"}


def packages() -> dict:
    from importlib.metadata import version
    return {p: version(p) for p in ("llama_cpp_python", "torch", "transformers", "accelerate", "safetensors",
                                    "gguf", "huggingface_hub", "numpy", "ipython", "tokenizers", "scipy")}


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_one(name: str, commit: str, pk: dict) -> dict | None:
    sc = load(name)
    d = Path("/tmp/r74") / ("run-" + hashlib.sha256(f"r74{name}".encode()).hexdigest()[:8])
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    sys.path.insert(0, str(HERE))
    if hasattr(sc, "fixture"):
        sc.fixture(d)
    (d / "envsetup.py").write_text(__import__("harness74").ENVSETUP)
    for fname, body in getattr(sc, "FILES", {}).items():
        (d / fname).write_text(body)
    if hasattr(sc, "CELLS"):
        (d / "cells.json").write_text(json.dumps(sc.CELLS))
        (d / "nb.py").write_text(NB)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "warning",
           "PYTHONPATH": str(d)}
    groups = []     # (cgroup folder, its limit file, the limit): a memory cgroup (OOM killer) or a pids cgroup
    if getattr(sc, "CGROUP_MIB", None):
        groups.append((CG, "memory.limit_in_bytes", sc.CGROUP_MIB * 2**20))
    if getattr(sc, "PIDS_MAX", None):
        groups.append((PIDS, "pids.max", sc.PIDS_MAX))
    for g, f, v in groups:
        g.mkdir(exist_ok=True)
        (g / f).write_text(str(v))

    def pre():
        for g, _, _ in groups:
            (g / "cgroup.procs").write_text(str(os.getpid()))
    try:
        p = subprocess.run(["timeout", str(getattr(sc, "TIMEOUT", 240)), "bash", "-c", sc.CMD], cwd=d, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=pre if groups else None)
    finally:
        for g, _, _ in groups:
            subprocess.run(["rmdir", str(g)])
        if hasattr(sc, "cleanup"):
            sc.cleanup(d)
    full = p.stdout.decode("utf-8", "replace")
    Path(f"/tmp/r74/{name}.full.txt").write_text(full)
    if p.returncode == 0:
        print(f"{name}: exit 0, no text (skipped)")
        return None
    lines = full.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    m = sc.META
    print(f"{name}: exit {p.returncode}, {len(lines)} lines")
    return {"id": f"made74-{name}", "source": f"produced-here:{HERE.relative_to(REPO)}/{name}.py@{commit}",
            "project": "produced-here", "runtime": m["runtime"], "version": m.get("version", VERSION[m["runtime"]]),
            "text": "\n".join(lines[-40:]), "label": m["label"], "family": m.get("family"),
            "memory": m["label"] != "not_memory", "phase": m["phase"], "cause": m["cause"],
            "wrapper": m["wrapper"], "exit_status": p.returncode, "scenario": name, "packages": pk,
            "note": f"stage: {m['stage']}" + (f"; {m['note']}" if m.get("note") else "")}


def main(argv: list[str]) -> int:
    if subprocess.run(["git", "status", "--porcelain", str(HERE)], capture_output=True, text=True,
                      cwd=REPO).stdout.strip():
        sys.exit("round74_make/ has uncommitted changes: commit before running")
    commit = subprocess.run(["git", "log", "-1", "--format=%H", "--", str(HERE)], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    names = argv or sorted(p.stem for p in HERE.glob("[ml][0-9][0-9].py"))
    pk = packages()
    old = {}
    if OUT.exists():
        old = {json.loads(x)["scenario"]: x for x in OUT.read_text().splitlines() if x.strip()}
    for n in names:
        rec = run_one(n, commit, pk)
        old.pop(n, None)
        if rec:
            old[n] = json.dumps(rec, ensure_ascii=False)
    OUT.write_text("".join(old[k] + "\n" for k in sorted(old)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
