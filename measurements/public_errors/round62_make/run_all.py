"""Run round 62's scenarios and write next/round62.jsonl: each text is the last TAIL lines of the merged stdout and
stderr of the user's command (all of it when shorter), verbatim, with its label fixed in the scenario's META before the
run. Usage (from the worktree): python3 measurements/public_errors/round62_make/run_all.py [scenario-file-stem ...]
A scenario's source is its path at the last commit that touched it; a file with uncommitted changes is refused, so the
cited script is the one that ran."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import REPO, WORK  # noqa: E402

OUT = REPO / "measurements" / "public_errors" / "next" / "round62.jsonl"
TAIL = 40
VERSION = {
    "llamacpp": "produced here: llama-cpp-python 0.3.36 (its vendored llama.cpp), CPU backend",
    "transformers": "produced here: transformers 5.24.0, torch 2.13.0+cpu, CPU",
    "huggingface_hub": "produced here: huggingface_hub (hf CLI), offline",
}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def tail(text: str) -> str:
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines[-TAIL:])


def versions() -> dict:
    import importlib.metadata as md
    return {p: md.version(p) for p in ("llama_cpp_python", "transformers", "torch", "huggingface_hub", "gguf",
                                       "ipython", "accelerate", "bitsandbytes")}


def main(argv: list[str]) -> int:
    files = sorted(p for p in HERE.glob("[ml][0-9][0-9]_*.py") if not argv or p.stem in argv)
    have = {json.loads(x)["id"]: json.loads(x) for x in OUT.read_text().splitlines()} if OUT.exists() else {}
    pkgs = versions()
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        # the scenario and its helpers (_common, _server, memcap62) must be as committed; the commit cited is the last
        # that touched this folder (revision: it was the scenario file's own, which missed a helper's change)
        folder = HERE.relative_to(REPO).as_posix()
        if git("status", "--porcelain", "--", folder):
            print(f"{folder}: uncommitted changes, refused", file=sys.stderr)
            return 2
        commit = git("log", "-1", "--format=%H", "--", folder)
        mod = importlib.import_module(path.stem)
        meta = mod.META
        t0 = time.time()
        output, status = mod.produce()
        took = time.time() - t0
        print(f"{path.name}: exit {status}, {len(output.splitlines())} lines, {took:.0f} s", flush=True)
        # the whole output stays beside the run (outside the repository), to check that the failure is the induced one
        (WORK / meta["id"] / "full_output.txt").write_text(output)
        if status == -1 or status == 0 and "Traceback" not in output:
            print(f"  not taken (did not fail as induced / skipped): {output[:200]!r}", flush=True)
            continue
        have[meta["id"]] = {
            "id": meta["id"], "source": f"produced-here:{rel}@{commit}", "project": "produced-here",
            "runtime": meta["runtime"], "version": VERSION[meta["runtime"]], "text": tail(output),
            "label": meta["label"], "family": meta["family"], "memory": meta["label"] != "not_memory",
            "phase": meta["phase"], "cause": meta["cause"], "wrapper": meta["wrapper"], "exit_status": status,
            "scenario": rel, "packages": pkgs,
            "note": (f"Produced on this machine (2 CPU cores, no GPU) by {rel} at {commit[:7]}; the label was fixed "
                     f"in the script's META before the run, by the cause induced: {meta['cause']}."),
        }
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in have.values()))
    print(f"{len(have)} records in {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
