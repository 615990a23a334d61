#!/usr/bin/env python3
"""Measure llama.cpp's buffers with llama-server's output cap, by the real library on the CPU.

llama-cpp-python 0.3.36's vendored llama.cpp (0c1e57098) has PR #23861's `llama_context_params.n_outputs_max`
("max outputs in a ubatch, 0 = n_batch"), so the prompt graph llama-server reserves can be created here: a context
with `n_outputs_max = n_parallel` (what `tools/server/server-context.cpp` `server_n_outputs_max` sets without a
draft model) next to one with the C API's default 0, over zero-weight GGUFs (runlocal.evidence.zero_gguf, the same
files as measurements/llamacpp). Nothing is decoded: the compute buffers are the worst-case graph reservation.

Run: PYTHONPATH=src python measurements/llamacpp_server_outputs/measure_cap.py [--out measured_cpu.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "llamacpp"))

from measure import FA, GGML_TYPE, LogCapture, import_llama, parse_context_log  # noqa: E402

from runlocal.evidence.zero_gguf import write_model  # noqa: E402

MODELS = ("llama-3.1-8b", "qwen3-8b", "qwen3-30b-a3b", "gemma-3-4b", "gpt-oss-20b", "deepseek-v2-lite", "phi-3-mini-4k")
# (n_ctx in all, n_seq_max, kv_unified, n_ubatch, flash attention): llama-server's -np auto (4 slots, one unified
# stream), one slot, and separate streams; -ub 512 and 2048
GRID = ((8192, 4, True, 512, "on"), (8192, 4, True, 512, "off"), (4096, 1, False, 512, "on"),
        (4096, 1, False, 2048, "on"), (8192, 2, False, 512, "on"))


def contexts(L, cap, model, name: str) -> list[dict]:
    out = []
    for n_ctx, n_seq, unified, n_ubatch, fa in GRID:
        for n_outputs_max in (n_seq, 0):         # llama-server's cap, the C API's default
            cp = L.llama_context_default_params()
            cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = n_ctx, 2048, n_ubatch, n_seq
            cp.type_k = cp.type_v = GGML_TYPE["f16"]
            cp.flash_attn_type, cp.kv_unified, cp.swa_full = FA[fa], unified, False
            cp.n_outputs_max = n_outputs_max
            ctx = L.llama_init_from_model(model, cp)
            parsed = parse_context_log(cap.take())
            out.append({"model": name, "weight_type": "q4_0", "backend": "cpu", "n_ctx_requested": n_ctx,
                        "n_batch": 2048, "n_ubatch": n_ubatch, "n_seq_max": n_seq, "kv_unified": unified,
                        "flash_attn": fa, "type_k": "f16", "type_v": "f16", "n_outputs_max": n_outputs_max,
                        "ok": bool(ctx), "buffers": parsed["buffers"],
                        "n_outputs_max_logged": parsed["cparams"].get("n_outputs_max"),
                        "llama_cpp": {"llama_cpp_python": version("llama_cpp_python"),
                                      "vendored_llama_cpp_commit": "0c1e57098"}})
            if ctx:
                L.llama_free(ctx)
                cap.take()
            print(json.dumps(out[-1]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=HERE / "measured_cpu.jsonl")
    a = ap.parse_args()
    L = import_llama(None)
    cap = LogCapture(L)
    L.llama_backend_init()
    records = []
    with tempfile.TemporaryDirectory() as d:
        for name in MODELS:
            info = write_model(name, Path(d), "q4_0")
            mp = L.llama_model_default_params()
            mp.n_gpu_layers, mp.use_extra_bufts = 0, False
            model = L.llama_model_load_from_file(str(info["path"]).encode(), mp)
            cap.take()
            records += contexts(L, cap, model, name)
            L.llama_model_free(model)
            cap.take()
            Path(info["path"]).unlink()
    a.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    cap.close()
    print(f"wrote {len(records)} records to {a.out}")


if __name__ == "__main__":
    main()
