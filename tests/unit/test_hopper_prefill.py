"""Prompt speed on Hopper: llama.cpp's MMQ kernels issue mma.sync, which reaches about 65 % of a Hopper GPU's
datasheet tensor rate (only wgmma reaches all of it; hardware/nvidia_peak.py MMA_SYNC_SHARE, arXiv:2501.12084), and every
layer costs a prompt token a fixed time besides its FLOPs (Fit.prefill_layer_us), so small models read slower than
their FLOPs say. The measured
runs are this project's own H100 SXM llama.cpp runs (measurements/speed/h100_llamacpp_own.jsonl, same build as the
H200 runs) — records the prefill efficiency is fitted on, so these are in-sample figures, not held-out ones."""

import json
from pathlib import Path

from asking import check_json, run_cli

ROOT = Path(__file__).resolve().parents[2]
OWN_H100 = ROOT / "measurements" / "speed" / "h100_llamacpp_own.jsonl"


def measured(model: str, test: str = "pp512") -> float:
    for line in OWN_H100.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if (r["model"], r["test"]) == (model, test):
            return r["tokens_per_s"]
    raise AssertionError(f"no own H100 record {model} {test}")


def explain(*args: str) -> str:
    r = run_cli("check", *args, "--explain")
    assert r.returncode in (0, 1), r.stderr
    return " ".join(r.stdout.split())


def test_h100_prompt_speed_of_an_8b_q4_0_is_near_the_measured_run():
    # "How fast does an H100 read a prompt with Llama 3.1 8B Q4_0?" — measured 10,957 tokens/s (pp512); the datasheet
    # int8 peak alone made it 18,926 (+73 %)
    plan = check_json("llama-3.1-8b", "--gpu", "h100", "--quant", "Q4_0", "--ctx", "4096")
    predicted = plan["speed"]["prefill_tokens_per_s"]
    assert abs(predicted / measured("llama-3.1-8b") - 1) < 0.1, predicted


def test_small_models_pay_the_fixed_cost_of_their_layers():
    # Qwen3-4B and Phi-3-mini have about half an 8B's FLOPs but 32–36 layers: measured 1.4–1.6× the 8B's prompt speed,
    # not 2× (the datasheet-and-FLOPs model said +121 % and +118 %). Gemma-3-4B's tied embedding is Q6_K under Q4_0:
    # counted by its share of the elements, 0.14 GB of the CPU-side table read as host weights copied every batch
    # (−32 %); by its bytes, none.
    for model in ("qwen3-4b", "phi-3-mini-4k", "gemma-3-4b"):
        plan = check_json(model, "--gpu", "h100", "--quant", "Q4_0", "--ctx", "4096")
        assert abs(plan["speed"]["prefill_tokens_per_s"] / measured(model) - 1) < 0.1, model
    words = explain("qwen3-4b", "--gpu", "h100", "--quant", "Q4_0", "--ctx", "4096")
    assert "+ 36 layers ×" in words and "µs (fixed per layer per token, fitted)" in words


def test_explain_names_the_mma_sync_share_on_hopper_only():
    hopper = explain("llama-3.1-8b", "--gpu", "h100", "--quant", "Q4_0", "--ctx", "4096")
    assert "1978.9 int8 TOPS × 0.65" in hopper and "mma.sync" in hopper
    # Ampere has no faster instruction: its datasheet int8 rate is what mma.sync reaches
    ampere = explain("llama-3.1-8b", "--gpu", "a100 sxm 80gb", "--quant", "Q4_0", "--ctx", "4096")
    assert "624 int8 TOPS)" in ampere and "mma.sync" not in ampere
    # F16 weights go through cuBLAS, which runs wgmma kernels on Hopper: the datasheet fp16 rate stands for the
    # matmuls (the flash-attention kernel's own mma.sync share is named in its attention clause, fa_prefill.py)
    f16 = explain("llama-3.1-8b", "--gpu", "h100", "--quant", "F16", "--ctx", "4096")
    matmuls = f16.split("+ attention (flash attention")[0]
    assert "× 989.4 fp16 TFLOPS)" in matmuls and "mma.sync" not in matmuls
    assert "989.4 TFLOPS f16 × 0.65 (mma.sync's share on Hopper)" in f16


def test_the_share_cuts_hopper_prompt_speed_but_not_decode():
    from runlocal.hardware import speed as S
    from runlocal.hardware.catalog import find_device

    h100, a100 = find_device("h100"), find_device("a100 sxm 80gb")
    assert S.reachable_peak(h100, "Q4_0") == h100.int8_tops * 0.65
    assert S.reachable_peak(a100, "Q4_0") == a100.int8_tops
    assert S.reachable_peak(h100, "Q4_0", backend="vulkan") == h100.int8_tops    # MMQ is the CUDA backend's
    plan = check_json("llama-3.1-8b", "--gpu", "h100", "--quant", "Q4_0", "--ctx", "4096")
    h200 = check_json("llama-3.1-8b", "--gpu", "h200", "--quant", "Q4_0", "--ctx", "4096")
    # the same die: the same prompt speed; decode differs by the H200's faster HBM3e
    assert plan["speed"]["prefill_tokens_per_s"] == h200["speed"]["prefill_tokens_per_s"]
    assert h200["speed"]["decode_tokens_per_s"] > plan["speed"]["decode_tokens_per_s"]


def test_a_checkpoint_read_from_safetensors_gets_the_quants_embedding_share_too():
    # gemma-3-4b read from its safetensors carries the checkpoint's BF16 bytes, not the Q4_0 file's: its embedding's
    # share of the bytes is the one llama-quantize's types give (Q6_K table), as for the catalog's description
    from dataclasses import replace

    from runlocal.hardware.token_work import embedding_share
    from runlocal.model.resolve import resolve_model

    catalog = resolve_model("gemma-3-4b")
    from_safetensors = replace(catalog, tensors=tuple(replace(t, dtype="BF16", nbytes=2 * t.numel)
                                                      for t in catalog.tensors))
    assert embedding_share(from_safetensors, "Q4_0") == embedding_share(catalog, "Q4_0")
    assert embedding_share(catalog, "Q4_0") > embedding_share(catalog, None)     # Q6_K against 4.5-bit rows
