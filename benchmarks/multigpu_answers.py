#!/usr/bin/env python3
"""Whether a change to llama.cpp's multi-GPU planning moved any answer: `runlocal check … --json` for a fixed list of
checks over several GPUs (written down before session 19's search changes), each a cold process, written as one JSON
object per line; `--compare A B` says which checks differ between two such files (the whole JSON document, the
--explain steps included).

  PYTHONPATH=/path/to/tree/src python3 benchmarks/multigpu_answers.py --out before.jsonl
  python3 benchmarks/multigpu_answers.py --compare before.jsonl after.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# (model, --gpu, extra arguments): the fit_multigpu.py cases first, then dense and MoE models on 2-4 GPUs, with and
# without -c and --ram, whose max-context searches plan several contexts each
CHECKS = (
    ("qwen3-235b-a22b", "4xrtx-3090", ()),
    ("deepseek-v3", "4xrtx-3090", ("--ctx", "8192")),
    ("gpt-oss-120b", "2xarc-b580", ("--ctx", "8192")),
    ("glm-4.5-air", "2xrtx-3090", ()),
    ("qwen3-235b-a22b", "3xrtx-3090", ()),
    ("qwen3-235b-a22b", "4xrtx-3090", ("--ctx", "32768")),
    ("qwen3-235b-a22b", "4xrtx-3090", ("--ram", "64G")),
    ("deepseek-v3", "4xrtx-3090", ()),
    ("gpt-oss-120b", "2xrtx-3090", ()),
    ("gpt-oss-120b", "3xrtx-3060", ("--ram", "64G")),
    ("glm-4.5-air", "3xrtx-3090", ("--ctx", "16384")),
    ("qwen3.5-122b-a10b", "4xrtx-3090", ()),
    ("qwen3.5-397b-a17b", "4xrtx-3090", ("--ram", "256G")),
    ("qwen3-next-80b-a3b", "2xrtx-3090", ()),
    ("qwen3-30b-a3b", "2xrtx-3060", ()),
    ("qwen3.6-35b-a3b", "2xrtx-3060", ("--ctx", "65536")),
    ("llama-3.1-70b", "2xrtx-3090", ("--ram", "64G")),
    ("llama-3.1-70b", "2xrtx-3090", ("--ctx", "32768", "--ram", "64G")),
    ("llama-3.3-70b", "2xrtx-4090", ()),
    ("llama-3.1-8b", "2xrtx-3060", ()),
    ("gemma-3-27b", "2xrtx-3060", ("--ctx", "16384")),
    ("llama-3.1-70b", "4xrtx-3060", ()),
    ("mixtral-8x7b", "2xrtx-3060", ()),
    ("kimi-k2", "4xrtx-3090", ("--ram", "512G")),
)


def answer(model: str, gpu: str, extra: tuple[str, ...]) -> dict:
    args = ["check", model, "--runtime", "llama.cpp", "--gpu", gpu, *extra, "--json"]
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "runlocal", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "400"})
    wall = time.perf_counter() - t
    try:
        doc = json.loads(done.stdout)
    except json.JSONDecodeError:
        doc = {"error": (done.stdout + done.stderr).strip()[-400:]}
    return {"args": args, "answer": doc, "wall_s": round(wall, 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2)
    a = ap.parse_args()
    if a.compare:
        rows = [[json.loads(line) for line in open(p, encoding="utf-8")] for p in a.compare]
        differ = [r["args"] for r, s in zip(*rows) if r["answer"] != s["answer"]]
        print(f"{len(rows[0])} checks, {len(differ)} differ")
        for args in differ:
            print("  DIFFERS:", " ".join(args))
        sys.exit(1 if differ or len(rows[0]) != len(rows[1]) else 0)
    with open(a.out, "w", encoding="utf-8") as out:
        for model, gpu, extra in CHECKS:
            row = answer(model, gpu, extra)
            out.write(json.dumps(row) + "\n")
            doc = row["answer"]
            print(f"{row['wall_s']:6.2f} s  {model} {gpu} {' '.join(extra)}: max context {doc.get('max_context')} "
                  f"({doc.get('max_context_basis')}), {doc.get('verdict', doc.get('error'))}", flush=True)


if __name__ == "__main__":
    main()
