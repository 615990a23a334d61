"""The shrunk zero-weight GGUFs of the CUDA buffer run (README.md, "CUDA buffers of the other architectures"): one
catalog model per GGUF architecture that measurements/llamacpp/data/cuda.jsonl does not cover, written by
runlocal.evidence.catalog_gguf.write_gguf (the files test_llamacpp_catalog_real.py loads on the CPU) as
``<alias>.f16.gguf`` with the models-meta JSON measure.py's ``--models-meta`` reads.

  python measurements/llamacpp_h200/arch_ggufs.py --out-dir /tmp/gguf_arch [--list]

The pick (fixed before the run): for each architecture gguf_mix.gguf_arch names for a catalog model, except the nine
cuda.jsonl has (COVERED), the alias of the smallest hidden size (ties: the catalog's order); the architectures the
brief names first (FIRST), then the rest alphabetically, so a deadline cuts the least asked-for ones.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

COVERED = {"llama", "qwen3", "gemma3", "gemma2", "phi3", "qwen3moe", "gpt-oss", "deepseek2", "granitehybrid"}
FIRST = ["gemma4", "qwen35", "qwen35moe", "qwen3next", "glm4moe", "llama4", "mistral3"]
N_CTX_KEY = 32768       # the files' context_length (the run's largest context)


def picks() -> dict[str, str]:
    """GGUF architecture -> the catalog alias measured for it."""
    from runlocal.model.catalog import aliases, lookup
    from runlocal.quant.gguf_mix import gguf_arch

    best: dict[str, tuple[int, str]] = {}
    for alias in aliases():
        spec = lookup(alias)
        arch = gguf_arch(spec)
        if arch is None or arch in COVERED:
            continue
        if arch not in best or spec.hidden_size < best[arch][0]:
            best[arch] = (spec.hidden_size, alias)
    order = [a for a in FIRST if a in best] + sorted(a for a in best if a not in FIRST)
    return {arch: best[arch][1] for arch in order}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--list", action="store_true", help="print the picks and write nothing")
    a = ap.parse_args(argv)
    chosen = picks()
    if a.list:
        for arch, alias in chosen.items():
            print(f"{arch:16s} {alias}")
        return 0
    from runlocal.evidence.catalog_gguf import write_gguf

    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = {}
    for arch, alias in chosen.items():
        spec, path, _ = write_gguf(alias, out, n_ctx=N_CTX_KEY, name=f"{alias}.f16.gguf")
        meta[alias] = {"arch": arch, "num_hidden_layers": spec.n_layers, "repo": f"catalog:{alias} (shrunk)"}
        path.with_suffix(".json").write_text(json.dumps({"file_bytes": path.stat().st_size, "arch": arch}))
        print(f"{arch:16s} {alias:28s} {path.stat().st_size / 2**20:9.1f} MiB  {spec.n_layers} layers", flush=True)
    (out / "models_meta.json").write_text(json.dumps(meta, indent=1))
    print(" ".join(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
