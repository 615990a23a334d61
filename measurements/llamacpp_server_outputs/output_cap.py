"""How much of llama.cpp's compute buffer the prompt graph's logits take, traced by runlocal's ggml-alloc simulation:
every n_ubatch token an output (the C API's default, n_outputs_max = n_batch, what runlocal models and what its
measured records used) against llama-server's cap since ggml-org/llama.cpp PR #23861 ("llama: limit max outputs of
llama_context", 2026-06-01) and PR #23988: tools/server/server-context.cpp server_n_outputs_max() =
max(1, min(n_batch, n_parallel × (1 + speculative n_max))), so the prompt graph is reserved with n_parallel output
rows. Then the public A/B measurements of that change (records.jsonl) against `runlocal check` for a build before
the cap (llama.cpp==b9272) and the current one, each command as typed.
Run: PYTHONPATH=src python measurements/llamacpp_server_outputs/output_cap.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from runlocal.model.catalog import lookup
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes.ggml import simulate_compute_cuda

MiB = 1 << 20


def gpu_compute(model_id: str, quant: str, n_kv: int, n_seqs: int, cap: int | None) -> float:
    """CUDA0's compute buffer with the prompt graph's outputs capped at ``cap`` (None: every ubatch token)."""
    model = gguf_view(lookup(model_id), quant)
    out = simulate_compute_cuda(model, 512, n_kv, True, n_gpu_layers=-1, n_seqs=n_seqs, n_outputs_max=cap)
    return out["CUDA0 compute"] / MiB


def planned(rec: dict, runtime: str) -> float:
    """CUDA0's compute buffer (MiB) of `runlocal check` for the record's command (--cpu-moe: --n-cpu-moe all)."""
    flags = [f for f in rec["command"].split()[3:] if f != "--cpu-moe"]
    if "--cpu-moe" in rec["command"]:
        flags += ["--n-cpu-moe", str(lookup(rec["model"]).n_layers)]
    out = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", rec["model"], "--gpu", rec["gpu"], "--runtime",
                          runtime, "-q", rec["quant"], *flags, "--json"], capture_output=True, text=True, check=True,
                         env=os.environ)
    return json.loads(out.stdout)["memory"]["devices"][0]["compute"] / MiB


def public_ab() -> None:
    print("\nPublic A/B measurements (records.jsonl) against runlocal check, CUDA0 compute MiB")
    for line in (Path(__file__).parent / "records.jsonl").read_text().splitlines():
        rec = json.loads(line)
        before, now = planned(rec, "llama.cpp==b9272"), planned(rec, "llama.cpp")
        m = rec["measured"]
        if "saved" in m:
            print(f"{rec['id']:30} saved: measured {m['saved']} (VRAM at start-up), planned {before - now:.0f} "
                  f"({before:.0f} → {now:.0f})")
        else:
            print(f"{rec['id']:30} before the cap: measured {m['baseline'][0]}, planned {before:.0f}; with the cap "
                  f"(+ PR #23764): measured {m['cap_and_pr23764'][0]}, planned {now:.0f}")


def main() -> None:
    print("GPU compute buffer, -ub 512, flash attention, every layer offloaded, 4 slots (-np auto), 8,192 cells")
    for model_id, quant in (("qwen3-8b", "Q4_K_M"), ("qwen3-30b-a3b", "Q4_K_M"), ("llama-3.1-8b", "Q4_K_M"),
                            ("gemma-3-12b", "Q4_K_M")):
        every = gpu_compute(model_id, quant, 8192, 4, None)
        server = gpu_compute(model_id, quant, 8192, 4, 4)
        print(f"{model_id:16} all 512 outputs {every:7.1f} MiB   llama-server (4 outputs) {server:7.1f} MiB   "
              f"ratio {every / server:.2f}")
    public_ab()


if __name__ == "__main__":
    main()
