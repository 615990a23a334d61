"""Real llama.cpp CPU runs of the gated delta-net hybrids (qwen3next, qwen35, qwen35moe): the zero-weight GGUF the
converter would write for a catalog model (full size or shrunk to one layer period), loaded by llama-cpp-python
0.3.36 (llama.cpp 0c1e57098) over a grid of contexts, and what llama.cpp logs for each (compute buffer, graph nodes,
KV and recurrent-state sizes). Used by measurements/llamacpp_qwen35/measure_cpu.py (which wrote cpu.jsonl) and
tests/accuracy/test_ggml_qwen35_real.py (which loads the shrunk models again)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

MODELS = ("qwen3.6-35b-a3b", "qwen3.5-27b", "qwen3-next-80b-a3b")
# n_ctx : n_ubatch : flash_attn (1 on, 0 off) : n_seq_max : kv_unified : K/V type
GRID = ("4096:512:1:1:0:f16", "4096:512:0:1:0:f16", "32768:2048:1:1:0:q8_0", "16384:2048:0:1:0:f16",
        "16384:512:1:4:0:f16", "16384:512:1:4:1:f16", "8192:4096:1:1:0:q8_0", "8192:1024:0:2:0:f16",
        "65536:512:1:1:0:f16", "150000:4096:1:1:1:q8_0")

# The child: one model, every context of the grid; llama.cpp logs to stderr (llama-cpp-python's verbose logger).
_CHILD = """
import sys, llama_cpp
from llama_cpp import _logger
_logger.set_verbose(True)
mp = llama_cpp.llama_model_default_params()
mp.n_gpu_layers = 0
mp.use_extra_bufts = False      # no CPU_REPACK copies of the (zero) weights
model = llama_cpp.llama_model_load_from_file(sys.argv[1].encode(), mp)
assert model, "model did not load"
for job in sys.argv[2:]:
    n_ctx, n_ub, fa, n_seq, unified, tk = job.split(":")
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx, cp.n_seq_max, cp.kv_unified = int(n_ctx), int(n_seq), unified == "1"
    cp.n_batch, cp.n_ubatch = max(2048, int(n_ub)), int(n_ub)
    cp.n_threads = cp.n_threads_batch = 1
    cp.flash_attn_type = int(fa)
    cp.type_k = cp.type_v = {"f16": 1, "q8_0": 8}[tk]     # GGML_TYPE_F16, GGML_TYPE_Q8_0
    print("@@ctx " + job, file=sys.stderr, flush=True)
    ctx = llama_cpp.llama_init_from_model(model, cp)
    if ctx:
        llama_cpp.llama_free(ctx)       # ~llama_context prints the compute buffer to 4 decimals
    print("@@end " + ("ok" if ctx else "failed"), file=sys.stderr, flush=True)
"""

_COMPUTE = re.compile(r"sched_reserve: +(\S+) compute buffer size = +([\d.]+) MiB")
_GRAPH = re.compile(r"sched_reserve: graph: nodes = (\d+), splits = (\d+)")
_KV = re.compile(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers")
_RS = re.compile(r"llama_memory_recurrent: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers")
_EXACT = re.compile(r"~llama_context: +(\S+) compute buffer size is +([\d.]+) MiB")


def write_gguf(alias: str, out_dir: Path, shrink: bool) -> Path:
    import gguf

    from runlocal.evidence.converter_meta import converter_kv, converter_shape, shrunk_config
    from runlocal.evidence.zero_gguf import write_zero_gguf
    from runlocal.model.catalog import find_entry, lookup
    from runlocal.model.hf_config import spec_from_config
    from runlocal.quant.gguf_mix import gguf_arch, gguf_view

    arch = gguf_arch(lookup(alias))
    assert arch is not None
    entry = find_entry(alias)
    assert entry is not None, alias
    config = entry["config"]
    if shrink:
        config = shrunk_config(config, arch)
    spec = spec_from_config(config, id=alias, source=f"measure:{alias}")
    view = gguf_view(spec, "F16")
    assert view is not None
    tensors = [(t.name, list(reversed(converter_shape(t.name, t.shape, arch))), gguf.GGMLQuantizationType[t.dtype or "F16"])
               for t in view.tensors]
    path = out_dir / f"{alias}{'-shrunk' if shrink else ''}.gguf"
    write_zero_gguf(path, arch, converter_kv(config, arch, 262144), tensors)
    return path


def parse(job: str, text: str) -> dict:
    n_ctx, n_ub, fa, n_seq, unified, tk = job.split(":")
    rec: dict = {"n_ctx": int(n_ctx), "n_ubatch": int(n_ub), "n_batch": max(2048, int(n_ub)),
                 "flash_attn": fa == "1", "n_seq_max": int(n_seq), "kv_unified": unified == "1", "type_k": tk,
                 "type_v": tk, "ok": "@@end ok" in text}
    if m := _EXACT.search(text):
        rec["compute_mib"] = float(m.group(2))
    if m := _COMPUTE.search(text):
        rec["compute_mib_logged"] = float(m.group(2))
    if m := _GRAPH.search(text):
        rec["graph_nodes"] = int(m.group(1))
    if m := _KV.search(text):
        rec["kv"] = {"mib": float(m.group(1)), "cells": int(m.group(2)), "layers": int(m.group(3))}
    if m := _RS.search(text):
        rec["rs"] = {"mib": float(m.group(1)), "cells": int(m.group(2)), "layers": int(m.group(3))}
    rec["log"] = [ln for ln in text.splitlines() if re.search(r"compute buffer|graph: nodes|KV buffer|RS buffer|"
                                                               r"llama_kv_cache: size|llama_memory_recurrent: size|"
                                                               r"n_ctx_seq +=|n_outputs_max +=|flash_attn +=", ln)]
    return rec


def measure(alias: str, shrink: bool, grid: list[str], gguf_dir: Path) -> list[dict]:
    path = write_gguf(alias, gguf_dir, shrink)
    r = subprocess.run([sys.executable, "-c", _CHILD, str(path), *grid], capture_output=True, text=True, check=False)
    text = r.stdout + r.stderr
    version = {"llama_cpp_python": "0.3.36", "vendored_llama_cpp_commit": "0c1e57098"}
    arch = re.search(r"general.architecture str += (\S+)", text)
    out = []
    for chunk in text.split("@@ctx ")[1:]:
        job, _, body = chunk.partition("\n")
        out.append({"model": alias, "shrunk": shrink, "arch": arch.group(1) if arch else None, "weights": "F16",
                    "backend": "cpu", "llama_cpp_version": version, **parse(job, "@@ctx " + chunk)})
    return out
