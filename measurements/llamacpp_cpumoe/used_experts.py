"""Which routed experts the H200 speed runs' prompt batch used, per layer, reconstructed from the files themselves.

Why: ggml-backend.cpp ggml_backend_sched_compute_splits copies a host-resident MUL_MAT_ID weight to the GPU for a
prompt batch *only for the experts the batch routes tokens to* ("when offloading MoE weights, copy only the experts that
are used": it reads the ids tensor on the host, sets a bitset of used experts and copies them in contiguous ranges). So
a --cpu-moe batch moves the used experts' bytes, not the whole expert tensors. With a trained router and a 512-token
batch every expert is used (uniform routing: 1 − (1 − k/E)^512 ≥ 0.98 for every catalog MoE). The runs' files are
runlocal's zero-weight GGUFs with random bytes in the token embedding, the norms and the routers (cpumoe_runs.write_models,
seed 0), so their routing is not uniform — and it can be recomputed exactly: every other weight is zero, so attention,
the SSM blocks and the experts add nothing and each layer's router sees RMSNorm(embedding) × that layer's norm weight.
The prompt is cuda_cpumoe.py time_speed's: tokens (17 i + 11) mod 1000 + 100, i < 512. Top-k of the router logits
(softmax and the gpt-oss bias do not change the order; the bias is added).

    PYTHONPATH=src python3 measurements/llamacpp_cpumoe/used_experts.py /tmp/dir > measurements/llamacpp_cpumoe/used_experts.json
"""
import json
import statistics
import sys
from pathlib import Path

import gguf
import numpy as np
from gguf.quants import dequantize

from runlocal.evidence.cpumoe_runs import write_models

# model: (router-input norm, layers, experts used per token)
MODELS = {"qwen3.6-35b-a3b": ("post_attention_norm", 40, 8), "qwen3-30b-a3b": ("ffn_norm", 48, 8),
          "gpt-oss-20b": ("post_attention_norm", 24, 4)}
TOKENS = [(17 * i + 11) % 1000 + 100 for i in range(512)]


def used_experts(path: str, norm: str, n_layer: int, k: int) -> dict:
    t = {x.name: x for x in gguf.GGUFReader(path).tensors}
    emb = t["token_embd.weight"]
    x = dequantize(np.asarray(emb.data)[TOKENS], emb.tensor_type).astype(np.float64)
    x = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)
    shares, total, used = [], 0, 0.0
    for layer in range(n_layer):
        w = np.asarray(t[f"blk.{layer}.{norm}.weight"].data, dtype=np.float64)
        router = np.asarray(t[f"blk.{layer}.ffn_gate_inp.weight"].data, dtype=np.float64)
        bias = t.get(f"blk.{layer}.ffn_gate_inp.bias")
        logits = (x * w) @ router.T + (np.asarray(bias.data, dtype=np.float64) if bias is not None else 0.0)
        top = np.argsort(-logits, axis=1)[:, :k]
        share = float((np.bincount(top.ravel(), minlength=router.shape[0]) > 0).mean())
        nbytes = sum(int(x.n_bytes) for name, x in t.items() if name.startswith(f"blk.{layer}.ffn_")
                     and "_exps." in name)
        shares.append(share)
        total += nbytes
        used += nbytes * share
    return {"expert_bytes": total, "used_expert_bytes": round(used), "used_share": round(used / total, 4),
            "per_layer_median": statistics.median(shares), "per_layer_min": min(shares), "per_layer_max": max(shares)}


if __name__ == "__main__":
    files = write_models(Path(sys.argv[1]), list(MODELS), randomize=True)
    json.dump({m: used_experts(files[m]["path"], *MODELS[m]) for m in MODELS}, sys.stdout, indent=1)
