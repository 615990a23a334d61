"""The KQ mask rule of llama.cpp builds (ggml-org/llama.cpp PR #23764, "llama: use f16 mask for FA to save VRAM",
031ddb2e0 = b9410): before it the mask graph input is f32 (in the host's compute buffer) and flash attention gets an
f16 ggml_cast of it; since, the input is f16. Issue #23527's A/B (records.jsonl) logged both compute buffers at
b9272's master with and without the PR; `runlocal check` plans the build before it (llama.cpp==b9272: no output
cap, f32 mask) and the current one (cap and f16 mask), each command as typed.
Run: PYTHONPATH=src python measurements/llamacpp_server_outputs/kq_mask.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from runlocal.model.catalog import lookup

MiB = 1 << 20


def planned(rec: dict, runtime: str) -> tuple[float, float]:
    """(CUDA0, CUDA_Host) compute MiB of `runlocal check` for the record's command (--cpu-moe: --n-cpu-moe all)."""
    flags = [f for f in rec["command"].split()[3:] if f != "--cpu-moe"]
    flags += ["--n-cpu-moe", str(lookup(rec["model"]).n_layers)]
    out = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", rec["model"], "--gpu", rec["gpu"], "--runtime",
                          runtime, "-q", rec["quant"], *flags, "--json"], capture_output=True, text=True, check=True,
                         env=os.environ)
    devices = json.loads(out.stdout)["memory"]["devices"]
    return devices[0]["compute"] / MiB, devices[-1]["compute"] / MiB


def main() -> None:
    rec = next(r for r in map(json.loads, (Path(__file__).parent / "records.jsonl").read_text().splitlines())
               if r["id"] == "issue23527-qwen3.6-35b-a3b")
    print("issue #23527 (Qwen3.6-35B-A3B, -c 150000 -ub 4096 -fa on, --cpu-moe, RTX 3080): compute MiB, logged / planned")
    for runtime, cell in (("llama.cpp==b9272", "baseline"), ("llama.cpp", "cap_and_pr23764")):
        gpu, host = planned(rec, runtime)
        log_gpu, log_host = rec["measured"][cell]
        print(f"{runtime:17} ({cell:15}) CUDA0 {log_gpu} / {gpu:.1f} ({(gpu - log_gpu) / log_gpu * 100:+.1f} %)   "
              f"CUDA_Host {log_host} / {host:.1f} ({(host - log_host) / log_host * 100:+.1f} %)")


if __name__ == "__main__":
    main()
