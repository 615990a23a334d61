#!/usr/bin/env python3
"""The CPU compute buffers real llama.cpp reserves for the gated delta-net hybrids (qwen3next, qwen35, qwen35moe).

Each catalog model is written as the zero-weight GGUF the converter would make of it (runlocal.evidence.converter_meta:
its tensors as runlocal's GGUF view names them, F16 matrices, the metadata convert_hf_to_gguf.py writes; a sparse file,
so an 80B costs no disk), at full size and shrunk to one period of its layer pattern (converter_meta.shrunk_config),
then loaded by llama-cpp-python 0.3.36 (llama.cpp 0c1e57098) on the CPU and given contexts over a grid of settings.
What llama.cpp logs is kept per context: the compute buffer (sched_reserve, and the 4-decimal figure ~llama_context
prints), the graph's node count, the KV and recurrent-state sizes. Nothing is decoded.

Usage:  PYTHONPATH=src python measurements/llamacpp_qwen35/measure_cpu.py --out measurements/llamacpp_qwen35/cpu.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from runlocal.evidence.qwen35_runs import GRID, MODELS, measure


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--grid", nargs="*", default=list(GRID))
    ap.add_argument("--sizes", default="shrunk,full")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d, open(a.out, "a") as f:
        for alias in a.models:
            for size in a.sizes.split(","):
                for rec in measure(alias, size == "shrunk", a.grid, Path(d)):
                    f.write(json.dumps(rec) + "\n")
                    print(alias, size, rec.get("n_ctx"), rec.get("n_ubatch"), rec.get("compute_mib"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
