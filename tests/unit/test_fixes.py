"""Fixes use only the levers of the plan's runtime, and each one, applied, really fits."""

from __future__ import annotations

import re

import pytest

from runlocal.check import CheckRequest, check


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def applied(fix_command: str, base: dict) -> dict:
    """The CheckRequest fields a fix's llama-server command sets."""
    kw = dict(base)
    if m := re.search(r"-m \S+-(\w+)\.gguf", fix_command):
        kw["quant"] = m.group(1)
    if m := re.search(r"-ngl (\d+)", fix_command):
        kw["n_gpu_layers"] = int(m.group(1))
    if m := re.search(r"--cache-type-k (\S+)", fix_command):
        kw["kv_cache"] = m.group(1)
    if m := re.search(r" -c (\d+)", fix_command):
        kw["ctx"] = int(m.group(1)) // kw.get("parallel", 1)
    return kw


@pytest.mark.parametrize("base", [                   # -ngl all (-2): with auto, llama-server --fit would run them
    dict(model="llama-3.1-70b", gpu="rtx-4090", ctx=8192, n_gpu_layers=-2),                   # a quant and CPU layers
    dict(model="llama-3.1-70b", gpu="rtx-4090", ctx=8192, quant="Q4_K_M", n_gpu_layers=-2),  # needs CPU layers
    dict(model="qwen3-8b", gpu="rtx-4060", ctx=65536, quant="Q4_K_M", n_gpu_layers=-2),       # KV cache too large
    dict(model="llama-3.1-8b", gpu="rtx-3060-12gb", ctx=16384, parallel=8, quant="Q4_K_M", n_gpu_layers=-2),
])
def test_every_llamacpp_fix_fits_when_applied(base):
    p = plan(**base)
    assert p.verdict == "does_not_fit" and p.fixes
    for fix in p.fixes:
        if "GPUs" in fix.title:
            continue
        again = plan(**applied(fix.command, base))
        assert again.verdict in ("fits", "tight"), (fix.title, fix.command)


def test_sglang_fixes_speak_sglang():
    p = plan(model="qwen2.5-14b", runtime="sglang", gpu="rtx-4090", ctx=32768)
    assert p.fixes
    for fix in p.fixes:
        assert "gpu_memory_utilization" not in fix.title + fix.command
        assert fix.command.startswith("python -m sglang.launch_server")


@pytest.mark.parametrize("runtime,gpu", [("transformers", "rtx-4090"), ("mlx", "m3-max-64gb")])
def test_no_gguf_or_layer_offload_fixes_outside_llamacpp(runtime, gpu):
    p = plan(model="llama-3.1-70b", runtime=runtime, gpu=gpu, ctx=8192, quant="bf16")
    assert p.verdict == "does_not_fit"
    for fix in p.fixes:
        assert not re.search(r"GGUF|-ngl|num_gpu|Offload", fix.title + fix.command), fix


def test_mlx_quant_fix_is_the_published_4bit_conversion_and_fits():
    # the bf16 checkpoint does not fit a 64 GB Mac; the fix names mlx-community's published 4-bit repo
    # (data/mlx_repos.json) instead of converting 140 GB of bf16 weights
    p = plan(model="llama-3.1-70b", runtime="mlx", gpu="m3-max-64gb", ctx=8192, quant="bf16")
    fix = next(f for f in p.fixes if "mlx-4bit" in f.title)
    assert "mlx_lm.generate --model mlx-community/Meta-Llama-3.1-70B-Instruct-4bit" in fix.command
    assert "mlx_lm.convert" not in fix.command
    assert plan(model="llama-3.1-70b", runtime="mlx", gpu="m3-max-64gb", ctx=8192,
                quant="mlx-4bit").verdict in ("fits", "tight")


def test_mlx_4bit_weights_by_hand():
    # Llama-3.2-1B: every Linear and the embedding (input widths divide by 64) → 4 bits + an f16 scale
    # and bias per 64 weights = 4.5 bits per weight; the 16 RMSNorm weights of 2,048 stay 16-bit
    p = plan(model="llama-3.2-1b", runtime="mlx", gpu="m3-max-64gb", quant="mlx-4bit")
    params = p.model.params
    norms = (2 * 16 + 1) * 2048
    assert p.weights.total == (params - norms) * 4 // 8 + (params - norms) // 64 * 4 + norms * 2


def test_a_pool_smaller_than_one_request_does_not_fit():
    # SGLang starts with a 42,765-token pool on a 4090 for Qwen2.5-7B, but rejects a 65,536-token request
    p = plan(model="qwen2.5-7b", runtime="sglang", gpu="rtx-4090", ctx=65536)
    assert p.allocation.kv_cache_tokens < 65536 and p.verdict == "does_not_fit"
    shorter = next(f for f in p.fixes if f.title.startswith("Reduce context"))
    # no longer than the 32,768 tokens Qwen2.5-7B-Instruct was trained for (config.json max_position_embeddings)
    assert f"--context-length {min(p.max_context, 32768)}" in shorter.command
    assert plan(model="qwen2.5-7b", runtime="sglang", gpu="rtx-4090", ctx=p.max_context).verdict in ("fits", "tight")


def test_weight_fixes_carry_the_flag_that_makes_them():
    for runtime in ("vllm", "sglang"):
        p = plan(model="qwen2.5-14b", runtime=runtime, gpu="rtx-4090", ctx=16384)
        weights = [f for f in p.fixes if "weights" in f.effect and "GPUs" not in f.title]
        assert weights, runtime
        for f in weights:
            # vLLM's own fp8 carries its flag; Qwen's published AWQ repo is served as stored, by its name
            if "fp8" in f.title:
                assert "--quantization fp8" in f.command, runtime
            else:
                assert "Qwen/Qwen2.5-14B-Instruct-AWQ" in f.command and "--quantization" not in f.command, runtime
