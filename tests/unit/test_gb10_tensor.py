"""The DGX Spark's tensor figures, derived from NVIDIA's own GB10 numbers (review22 finding 7), and the plan's reason for
giving no prefill there (session 22's held-out check, held_out/gb10_prefill_first_run.txt, failed; session 23's fitted
soc/cuda share: hardware/soc_prompt.py)."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.hardware.catalog import find_device


def test_the_spark_tensor_figures_follow_from_nvidias_31_tflops_fp32_and_6144_cores():
    spark = find_device("dgx-spark")
    # NVIDIA's Hot Chips figure: 31 TFLOPS FP32 over 6,144 CUDA cores (48 SMs, the RTX 5070's count), 2 FLOPs a core a
    # clock → 31e12 / 12,288 = 2.52 GHz; the RTX 50 per-SM rates a clock: 512 FP16 (FP32 accumulate), 1024 FP8, 2048 INT8
    clock = round(31e12 / (6144 * 2) / 1e9, 2)
    assert clock == 2.52 and spark.sm_count == 48
    assert spark.fp16_tflops == spark.bf16_tflops == round(48 * clock * 512 / 1000, 1) == 61.9
    assert spark.fp8_tflops == round(48 * clock * 1024 / 1000, 1) == 123.9
    assert spark.int8_tops == round(48 * clock * 2048 / 1000, 1) == 247.7
    # check against NVIDIA's other figure: '1 PFLOP' FP4 with sparsity = 8 × the dense FP8 rate (the RTX 50 entries'
    # AI TOPS rule: 8 × 419 = 3352 on the 5090)
    assert abs(8 * spark.fp8_tflops - 1000) / 1000 < 0.01
    five070 = find_device("rtx-5070")       # the same 48 SMs at its 2.51 GHz boost: the same per-SM rates
    assert abs(spark.fp16_tflops / five070.fp16_tflops - 2.52 / 2.51) < 0.01


def test_a_spark_plan_prices_quantized_prompts_only():
    # session 23: the soc/cuda share (fitted on llama.cpp's own Spark table, b6918) is applied, unvalidated
    # (tests/accuracy/test_speed_spark.py); float weights keep a reason, decode is the all-device entry's as before
    plan = check(CheckRequest(use_measurements=False, model="gpt-oss-20b", gpu="dgx-spark"))[0]
    assert plan.speed.get("prefill_tokens_per_s") and plan.speed.get("decode_tokens_per_s")
    f16 = check(CheckRequest(use_measurements=False, model="qwen3-0.6b", gpu="dgx-spark", quant="F16"))[0]
    assert f16.speed.get("prefill_tokens_per_s") is None and "float weights" in f16.speed["prefill_not_predicted"]


def test_a_jetson_without_tensor_figures_says_so():
    plan = check(CheckRequest(use_measurements=False, model="qwen3-0.6b", gpu="jetson-agx-orin-64gb"))[0]
    assert "no tensor figures" in (plan.speed.get("prefill_not_predicted") or "")
