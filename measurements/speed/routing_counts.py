#!/usr/bin/env python3
"""Tokens per expert that llama.cpp's router gives the bench's prompt, computed in numpy from a GGUF's own bytes, and
the MMQ tile factor those counts give next to runlocal's binomial expectation.

For a file of make_spread_gguf.py (or a zero file), where every weight but the embeddings, norms and routers is zero,
each layer's residual stream is the token's embedding, so layer L's router sees RMSNorm(embedding) × its FFN-input
norm weight (ffn_norm; gpt-oss: post_attention_norm). The logits are that × ffn_gate_inp (+ its bias where present);
qwen3moe, deepseek2 (softmax gating) and gpt-oss (softmax over the selected) all pick the top n_used logits
(llama-graph.cpp build_moe_ffn: argsort top-k of the probabilities or logits, softmax being monotonic). A zero file
has all logits equal: every token goes to the same n_used experts (see the README), which this script does not model —
it reports them as given.

Prompt: token ids (i*7919 + 1) % n_vocab, i < prompt (measurements/speed/h100_bench.py), split into micro-batches
of ``ubatch`` tokens. Per layer and micro-batch, the tile factor is J·Σ_e ceil(t_e/J) / Σ_e t_e (J = the MMQ tile
width for the micro-batch: hardware/backend_speed.py mmq_tile_width), i.e. the MMQ column tiles the experts run over
the tiles the same tokens would fill; the expectation is runlocal's expert_tile_factor (t binomial, uniform routing).

--ftz-softmax: select as CUDA did in run 5 for the softmax-gated architectures (qwen3moe, deepseek2): on float32
probabilities whose values under 2**-126 are flushed to zero, ties (at zero) to the lowest expert index. With these
files' router scale (logits of standard deviation ~45) the k-th probability of a few % of tokens underflows on the GPU.

Usage: PYTHONPATH=src python measurements/speed/routing_counts.py FILE.gguf [--configs 128:128 512:128 512:512 2048:2048]
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys

import numpy as np


def _field(reader, key: str):
    f = reader.fields[key]
    return f.parts[f.data[0]].tolist()[0] if len(f.data) == 1 else None


def router_inputs(reader, ids: np.ndarray) -> tuple[np.ndarray, float]:
    """The prompt's embeddings (dequantized from the file) and the model's RMS-norm epsilon."""
    from gguf.quants import dequantize
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    eps = float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon"))
    emb = next(t for t in reader.tensors if t.name == "token_embd.weight")
    rows = np.asarray(emb.data)[ids]                         # raw blocks of the prompt's rows
    return dequantize(rows, emb.tensor_type).astype(np.float64), eps


def routed_counts(path: str, prompt: int, ubatch: int, ftz_softmax: bool = False) -> dict:
    """Per MoE layer and micro-batch, tokens per expert; plus the model's shape."""
    r = router_topk(path, prompt, ftz_softmax)
    r["layers"] = [{"layer": il, "counts": [np.bincount(top[s:s + ubatch].ravel(), minlength=r["n_experts"]).tolist()
                                            for s in range(0, prompt, ubatch)]}
                   for il, top in r.pop("topk").items()]
    return r


def router_topk(path: str, prompt: int, ftz_softmax: bool = False) -> dict:
    """The experts each prompt token is routed to, per MoE layer ({layer: (prompt, n_used) array}), and the shape."""
    from gguf import GGUFReader
    reader = GGUFReader(path)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    n_vocab = int(_field(reader, f"{arch}.vocab_size"))
    n_used = int(_field(reader, f"{arch}.expert_used_count"))
    n_experts = int(_field(reader, f"{arch}.expert_count"))
    ids = np.array([(i * 7919 + 1) % n_vocab for i in range(prompt)])
    x, eps = router_inputs(reader, ids)
    x = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    by_name = {t.name: t for t in reader.tensors}
    layers = sorted(int(m.group(1)) for n in by_name if (m := re.match(r"blk\.(\d+)\.ffn_gate_inp\.weight$", n)))
    out = {}
    for il in layers:
        norm = by_name.get(f"blk.{il}.ffn_norm.weight") or by_name[f"blk.{il}.post_attention_norm.weight"]
        w = np.asarray(by_name[f"blk.{il}.ffn_gate_inp.weight"].data, dtype=np.float64)   # (n_experts, n_embd)
        logits = (x * np.asarray(norm.data, dtype=np.float64)) @ w.T
        bias = by_name.get(f"blk.{il}.ffn_gate_inp.bias")
        if bias is not None:
            logits = logits + np.asarray(bias.data, dtype=np.float64)
        if not logits.any():
            raise SystemExit(f"{path}: layer {il}'s router logits are all zero (a zero file): routing is by ties")
        if ftz_softmax and arch in ("qwen3moe", "deepseek2"):
            probs = np.exp((logits - logits.max(axis=1, keepdims=True)).astype(np.float32))
            probs[probs < np.finfo(np.float32).tiny] = 0.0          # flush to zero: no subnormals
            out[il] = np.argsort(-probs, axis=1, kind="stable")[:, :n_used]
        else:
            out[il] = np.argpartition(-logits, n_used - 1, axis=1)[:, :n_used]
    return {"arch": arch, "n_vocab": n_vocab, "n_experts": n_experts, "n_used": n_used, "topk": out}


def tile_factor(counts: list[int], width: int) -> float:
    return width * sum(math.ceil(t / width) for t in counts) / sum(counts)


def summarize(path: str, prompt: int, ubatch: int, ftz_softmax: bool = False) -> dict:
    from runlocal.hardware.backend_speed import expert_tile_factor, mmq_tile_width
    r = routed_counts(path, prompt, ubatch, ftz_softmax)
    width = mmq_tile_width(ubatch)
    factors = [tile_factor(c, width) for lay in r["layers"] for c in lay["counts"]]
    active = [sum(1 for t in c if t) for lay in r["layers"] for c in lay["counts"]]
    tmax = [max(c) for lay in r["layers"] for c in lay["counts"]]
    expected = expert_tile_factor(r["n_experts"], r["n_used"], ubatch, "cuda", "nvidia", True, "9.0")
    first = r["layers"][0]
    return {"file": path.rsplit("/", 1)[-1], "prompt": prompt, "ubatch": ubatch, "tile_width": width,
            "n_experts": r["n_experts"], "n_used": r["n_used"], "moe_layers": len(r["layers"]),
            "mean_tokens_per_expert": ubatch * r["n_used"] / r["n_experts"],
            "tile_factor_real_mean": round(float(np.mean(factors)), 3),
            "tile_factor_real_min": round(min(factors), 3), "tile_factor_real_max": round(max(factors), 3),
            "tile_factor_binomial": round(expected, 3),
            "experts_hit_mean": round(float(np.mean(active)), 1), "max_tokens_one_expert_mean": round(float(np.mean(tmax)), 1),
            "first_moe_layer": first["layer"], "first_layer_first_batch_counts": first["counts"][0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf", nargs="+")
    ap.add_argument("--configs", nargs="*", default=["128:128", "512:128", "512:512", "2048:2048"],
                    help="PROMPT:UBATCH pairs (the bench's configurations)")
    ap.add_argument("--json", action="store_true", help="one JSON object per file and configuration")
    ap.add_argument("--ftz-softmax", action="store_true", help="select as run 5's GPU did (see the docstring)")
    a = ap.parse_args(argv)
    for path in a.gguf:
        for cfg in a.configs:
            prompt, ubatch = (int(v) for v in cfg.split(":"))
            s = summarize(path, prompt, ubatch, a.ftz_softmax)
            if a.json:
                print(json.dumps(s))
            else:
                print(f"{s['file']:28s} pp{prompt:<5d} ub{ubatch:<5d} J={s['tile_width']:3d}  t̄={s['mean_tokens_per_expert']:6.1f}"
                      f"  experts hit {s['experts_hit_mean']:5.1f}/{s['n_experts']}  max t {s['max_tokens_one_expert_mean']:6.1f}"
                      f"  tile factor real {s['tile_factor_real_mean']:.3f} ({s['tile_factor_real_min']:.3f}-"
                      f"{s['tile_factor_real_max']:.3f} over {s['moe_layers']} layers)  binomial {s['tile_factor_binomial']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
