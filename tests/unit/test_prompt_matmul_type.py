"""A weight-only 4-bit format outside ggml (vLLM's AWQ / GPTQ / W4A16 kernels, bitsandbytes' 4-bit layers) multiplies
16-bit activations on the fp16 tensor cores, so its prompt is priced on the float path, not on the int8 peak llama.cpp's
MMQ reaches for its integer types (review14 finding 11: vLLM AWQ on an A100 was priced on 624 int8 TOPS)."""

from __future__ import annotations

import re

from runlocal.check import check
from runlocal.hardware.nvidia_peak import prompt_matmul_type
from runlocal.request import CheckRequest


def _prefill(runtime, quant, gpu="rtx-4090", model="llama-3.1-8b"):
    plan, _ = check(CheckRequest(model=model, runtime=runtime, quant=quant, gpu=gpu, ctx="8192"))
    step = next(s for s in plan.to_dict()["explain"] if s["label"] == "prefill speed")
    return plan.speed["prefill_tokens_per_s"], step["formula"]


def test_the_matmul_type_of_each_kind_of_weights():
    assert prompt_matmul_type("awq", ggml=False) == "F16"
    assert prompt_matmul_type("gptq", ggml=False) == "F16"
    assert prompt_matmul_type("nf4", ggml=False) == "F16"
    assert prompt_matmul_type("fp8", ggml=False) == "fp8"        # W8A8: the fp8 tensor cores
    assert prompt_matmul_type("Q4_K_M", ggml=True) == "Q4_K_M"   # MMQ: int8


def test_vllm_awq_is_priced_on_the_fp16_path_like_its_16_bit_checkpoint():
    awq, awq_formula = _prefill("vllm", "awq")
    bf16, _ = _prefill("vllm", None)
    # the same matmul FLOPs per token (2 × params) on the same path: the same prompt rate
    assert awq == bf16
    assert re.search(r"÷ \([\d.]+ × [\d.]+ fp16 TFLOPS", awq_formula), awq_formula


def test_llama_cpp_integer_types_keep_the_int8_peak():
    _, formula = _prefill("llama.cpp", "Q4_K_M")
    assert re.search(r"÷ \([\d.]+ × [\d.]+ int8 TOPS", formula), formula
