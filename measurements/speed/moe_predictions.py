#!/usr/bin/env python3
"""runlocal's prompt-speed predictions for the H100 MoE micro-batch run (h100/moe_ubatch_*.jsonl), written BEFORE the
run: a held-out check of the MMQ expert-tile rule (hardware/backend_speed.py expert_tile_factor), scored once.

Two figures per (model, prompt, ubatch):
  * ``cli``: what a user reads — `runlocal check MODEL --gpu h100 --quant Q4_0 --ctx 4096 -np 1 -b B -ub U --json`,
    speed.prefill_tokens_per_s. The plan's prompt is always 512 tokens (llama-bench's pp512) at micro-batch
    min(512, U), so for U = 2048 the CLI figure is its pp512 figure, and pp128 has no CLI figure of its own.
  * ``rule``: the same formula (hardware/speed.py speed_plan's all-GPU path: 2 FLOPs per active weight + the routed
    experts' tile padding at the micro-batch + attention at half the prompt, ÷ eff × peak, + layers × layer µs) at the
    bench's own prompt and micro-batch. For pp512 at U = 128 and 512 it must equal the CLI figure (asserted).

Usage: PYTHONPATH=src python measurements/speed/moe_predictions.py > measurements/speed/h100/moe_ubatch_predictions.jsonl
"""
from __future__ import annotations

import json
import subprocess
import sys

MODELS = ["qwen3-30b-a3b", "gpt-oss-20b", "deepseek-v2-lite", "llama-3.1-8b"]
CONFIGS = [(128, 128), (512, 128), (512, 512), (2048, 2048)]   # (prompt = n_batch, n_ubatch): run 3
CONFIGS_RUN4 = [(256, 256), (1024, 1024), (2048, 512)]           # added before run 4 (the same held-out rule)
QUANT, GPU, BACKEND = "Q4_0", "h100", "cuda"


def cli_prefill(model: str, batch: int, ubatch: int) -> float:
    cmd = [sys.executable, "-m", "runlocal.cli", "check", model, "--gpu", GPU, "--quant", QUANT, "--ctx", "4096",
           "-np", "1", "-b", str(batch), "-ub", str(ubatch), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout)["speed"]["prefill_tokens_per_s"])


def rule_prefill(model_name: str, prompt: int, ubatch: int, factor: float | None = None) -> tuple[float, float]:
    """(tokens/s, expert tile factor) of speed_plan's all-GPU prefill formula at this prompt and micro-batch; ``factor``
    replaces the tile factor (1.0: the formula without the tiles' padding, h100_moe_compare.py)."""
    from runlocal.hardware import speed as sp
    from runlocal.hardware.catalog import find_device
    from runlocal.model.resolve import resolve_model
    model, dev = resolve_model(model_name), find_device(GPU)
    klass = sp.device_class(dev)
    fit = sp.constants(klass, BACKEND, sp.backend_variant(dev, BACKEND))
    if factor is None:
        factor = sp.expert_factor(model, dev, QUANT, BACKEND, min(prompt, ubatch))
    flops = (2 * sp.active_matmul_params(model) + sp.ATTN_FACTOR * sp.attention_flops_per_token(model, prompt / 2)
             + sp._padding_flops(model, factor))
    tps = sp.prefill_speed(flops_per_token=flops, peak_tflops=sp.prefill_peak(dev, QUANT, BACKEND),
                           eff=sp.prefill_eff(fit, QUANT), n_layers=model.n_layers, layer_us=fit.prefill_layer_us)
    assert tps is not None
    return tps, factor


def main() -> int:
    for m in MODELS:
        for prompt, ub in CONFIGS + CONFIGS_RUN4:
            rule, factor = rule_prefill(m, prompt, ub)
            cli = cli_prefill(m, prompt, ub) if prompt >= 512 else None
            if prompt == 512 and cli is not None:
                assert abs(cli - round(rule, 1)) < 0.11, (m, prompt, ub, cli, rule)   # the replica is the CLI's formula
            print(json.dumps({"model": m, "device": "h100-sxm", "quant": QUANT, "test": f"pp{prompt}",
                              "n_batch": prompt, "n_ubatch": ub, "predicted_rule_tokens_per_s": round(rule, 1),
                              "predicted_cli_tokens_per_s": cli, "expert_tile_factor": round(factor, 3),
                              "cli": f"runlocal check {m} --gpu {GPU} --quant {QUANT} --ctx 4096 -np 1 -b {prompt} "
                                     f"-ub {ub} --json" if cli is not None else None}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
