"""transformers planner against real CUDA runs: peak memory of `generate` above the weights.

Records: measurements/transformers/data/cuda_peak.jsonl (an H100, torch 2.11, transformers 5.17,
random bf16 weights of real architectures; how to reproduce: measurements/transformers/README.md).
For each record the model is built from its config with runlocal's own reader, planned with the
transformers runtime at ctx = prompt + new tokens, max_new_tokens = new tokens and parallel = batch,
and the planned GPU KV cache + compute buffer (+ the cuBLAS workspace that torch's allocator holds) is
compared with torch.cuda.max_memory_allocated − the weights.
SDPA and eager-attention records are scored (the planner is given the record's attn_implementation);
the summary gives each on its own line and both together.

Run: python benchmarks/accuracy_transformers.py (or python -m runlocal.evidence.transformers_peak)
"""

from __future__ import annotations

import json
import statistics
import sys

from runlocal.units import MiB

from . import MEASUREMENTS

DATA = MEASUREMENTS / "transformers" / "data" / "cuda_peak.jsonl"
# torch allocates cuBLAS's workspace through its caching allocator, so max_memory_allocated includes it
# (~32 MiB here, measurements/transformers/README.md); the planner books it under overhead (cuBLAS).
WORKSPACE_IN_ALLOCATOR = 32 * MiB


def predict(rec: dict) -> tuple[int, int]:
    """(planned peak above the weights, planned weight bytes) on one 80 GB GPU."""
    from runlocal.model.hf_config import spec_from_config
    from runlocal.plan import estimate
    from runlocal.runtimes import Settings, Target
    from runlocal.runtimes.options import TransformersOptions
    from runlocal.runtimes.transformers import Transformers

    spec = spec_from_config(rec["config"], id=rec["model"], source="measurements/transformers")
    weights = estimate(spec, "bf16")
    settings = Settings(runtime="transformers", ctx=rec["prompt_len"] + rec["new_tokens"], parallel=rec["batch"],
                        quant="bf16", transformers=TransformersOptions(max_new_tokens=rec["new_tokens"]))
    gpu = Target("NVIDIA H100 80GB HBM3", "gpu", rec["env"]["total_mib"] * MiB)
    alloc = Transformers(attn_implementation=rec["attn_implementation"]).allocate(
        spec, weights, settings, [gpu, Target("CPU", "cpu", 128 << 30)])
    d = alloc.devices[0]
    return d.kv_cache + d.compute + WORKSPACE_IN_ALLOCATOR, weights.total


def main() -> int:
    records = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    rows, weight_errs = [], []
    errs: dict[str, list[float]] = {}
    for rec in records:
        if not rec.get("ok"):
            continue
        planned, w = predict(rec)
        real = rec["peak_above_weights"]
        err = (planned - real) / real * 100
        errs.setdefault(rec["attn_implementation"], []).append(abs(err))
        weight_errs.append(abs(w - rec["weight_bytes"]) / rec["weight_bytes"] * 100)
        rows.append((rec["model"], rec["attn_implementation"], rec["batch"], rec["prompt_len"], rec["new_tokens"],
                     rec["padded"], real / MiB, planned / MiB, err))
    print(f"{'model':<14}{'attn':<6}{'B':>3}{'prompt':>8}{'new':>5} pad {'real MiB':>10}{'plan MiB':>10}{'error':>9}")
    for m, attn, b, p, n, pad, real, plan, err in rows:
        print(f"{m:<14}{attn:<6}{b:>3}{p:>8}{n:>5} {'y' if pad else 'n':>3} {real:>10.1f}{plan:>10.1f}{err:>+8.1f}%")
    print(f"\nweights: median |error| {statistics.median(weight_errs):.3f}% over {len(weight_errs)} runs")
    groups = [(f"{attn.upper() if attn == 'sdpa' else attn}", e) for attn, e in sorted(errs.items(), reverse=True)]
    groups.append(("all", [x for e in errs.values() for x in e]))
    for label, e in groups:
        print(f"peak above weights ({label}): median |error| {statistics.median(e):.1f}%, max {max(e):.1f}% "
              f"over {len(e)} runs; within 10%: {sum(x <= 10 for x in e)}/{len(e)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
