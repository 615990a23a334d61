#!/usr/bin/env python3
"""Whether the max context a plan states depends on the --ctx asked: each row of issue 16's grid that --fit
places (llama.cpp, Ollama × RTX 3060 / RTX 4090) asked at the runtime's default context, 4K, 32K and the trained
context, each in a fresh process (no earlier request can steer the answer), and the max contexts compared.

The grid leaves the RAM unstated, so each request settles its own assumed RAM (hardware/assumed_ram.py) and the
hardware itself differs between the contexts asked; so each group is asked twice: as the grid asks ("grid", the RAM
each request settled shown), and with --ram stated at the size the default-context request settled ("--ram"),
where the model, hardware and settings other than -c are the same for the four. A group whose "--ram" max contexts
differ is marked DIFFERS.

  python benchmarks/max_context_by_ctx.py                        # the hybrid / MoE models below
  python benchmarks/max_context_by_ctx.py --model qwen3.5-397b-a17b --gpu rtx-3060
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("qwen3.5-397b-a17b", "qwen3.5-122b-a10b", "qwen3-next-80b-a3b", "jamba-mini-1.5", "gpt-oss-120b",
          "nemotron-3-nano-30b-a3b", "glm-4.5-air")
RUNTIMES = ("llama.cpp", "ollama")
GPUS = ("rtx-3060", "rtx-4090")
CONTEXTS = ("default", "4096", "32768", "trained")

_ASK = """
import json, sys
from runlocal.check import CheckRequest, check
from runlocal.model import catalog
model, runtime, gpu, ctx, ram = json.loads(sys.argv[1])
if ctx == "trained":
    ctx = str(catalog.lookup(model).max_position_embeddings or 4096)
plan, _ = check(CheckRequest(model=model, runtime=runtime, gpu=gpu, ctx=None if ctx == "default" else ctx,
                             ram=ram, use_measurements=False))
host = [d.capacity for d in plan.allocation.devices if d.kind == "cpu"]
o = plan.settings.llamacpp
print(json.dumps({"max_context": plan.max_context, "verdict": plan.verdict, "ctx": plan.settings.ctx,
                  "ngl": o.n_gpu_layers, "n_cpu_moe": o.n_cpu_moe, "ram_gib": host[0] / 2**30 if host else None}))
"""


def ask(model: str, runtime: str, gpu: str, ctx: str, ram: str | None) -> dict:
    """One check in a fresh process (this tree's src first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", _ASK, json.dumps([model, runtime, gpu, ctx, ram])],
                          capture_output=True, text=True, env=env, timeout=900)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"rc {done.returncode}"}
    return json.loads(done.stdout)


def _cell(r: dict) -> str:
    if "error" in r:
        return f"error: {r['error'][:40]}"
    mc = f"{r['max_context']:,}" if r["max_context"] else "—"
    return f"{mc:>8} {r['verdict'][:5]:<5} c {r['ctx']:>7,} ngl {r['ngl']!s:>3}/{r['n_cpu_moe']!s:<3}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", help="catalog models (repeatable; default: hybrid / MoE models)")
    ap.add_argument("--runtime", action="append", choices=RUNTIMES)
    ap.add_argument("--gpu", action="append", choices=GPUS)
    ap.add_argument("--json", type=Path, help="also write every answer as JSON lines")
    args = ap.parse_args()
    sink = args.json.open("w") if args.json else None
    differs = 0
    groups = 0
    for model in args.model or MODELS:
        for runtime in args.runtime or RUNTIMES:
            for gpu in args.gpu or GPUS:
                groups += 1
                grid = {ctx: ask(model, runtime, gpu, ctx, None) for ctx in CONTEXTS}
                ram_gib = grid["default"].get("ram_gib")
                ram = f"{round(ram_gib)}GiB" if ram_gib else None
                stated = {ctx: ask(model, runtime, gpu, ctx, ram) for ctx in CONTEXTS}
                answers = {r.get("max_context") for r in stated.values()}
                mark = "DIFFERS" if len(answers) > 1 else "same"
                differs += len(answers) > 1
                print(f"{model} {runtime} {gpu}: --ram {ram} → {mark}")
                for ctx in CONTEXTS:
                    g = grid[ctx]
                    gram = f"{g['ram_gib']:.0f} GiB" if g.get("ram_gib") else "—"
                    print(f"  --ctx {ctx:<8} --ram: {_cell(stated[ctx])}   grid (RAM {gram}): {_cell(g)}")
                if sink:
                    sink.write(json.dumps({"model": model, "runtime": runtime, "gpu": gpu, "ram": ram,
                                           "stated": stated, "grid": grid}) + "\n")
                sys.stdout.flush()
    print(f"{differs} of {groups} groups state different max contexts for different --ctx at one stated --ram")


if __name__ == "__main__":
    main()
