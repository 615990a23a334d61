"""vLLM / SGLang / transformers have no prompt-speed records of their own: their prompt rate borrows llama.cpp's dense
achieved rate on the same card (hardware/nvidia_peak.py borrowed_f16_path). For float weights that is llama.cpp's F16 path,
so session 13's FP16-accumulate rule (GeForce cards run it at twice their FP32-accumulate figure) must not halve their
figure; it moves llama.cpp's own BF16 only, which ggml-cuda multiplies at FP32 accumulate (review13, finding 1)."""
from __future__ import annotations

import pytest

from tests.asking import check_json


def prefill(*args: str) -> float:
    return float(check_json(*args)["speed"]["prefill_tokens_per_s"])


@pytest.mark.parametrize("runtime", ["vllm", "sglang", "transformers"])
def test_a_pytorch_runtime_on_a_4090_reads_a_prompt_as_llamacpp_f16_does(runtime):
    borrowed = prefill("llama-3.1-8b", "--gpu", "rtx-4090", "--runtime", runtime)
    llamacpp_f16 = prefill("llama-3.1-8b", "--gpu", "rtx-4090", "--quant", "F16")
    assert borrowed == pytest.approx(llamacpp_f16, rel=0.02)


def test_llamacpp_bf16_on_geforce_is_slower_than_f16_but_not_on_a_full_rate_card():
    # ggml-cuda: F16 weights at CUBLAS_COMPUTE_16F, BF16 at CUBLAS_COMPUTE_32F; a GeForce card runs FP32 accumulate at
    # half its FP16-accumulate rate (NVIDIA Ada whitepaper: RTX 4090 165.2 vs 330.3 TFLOPS), an RTX A6000 at the same.
    f16 = prefill("llama-3-8b", "--gpu", "rtx-4090", "--quant", "F16")
    bf16 = prefill("llama-3-8b", "--gpu", "rtx-4090", "--quant", "BF16")
    assert bf16 < 0.7 * f16
    a6000_f16 = prefill("llama-3-8b", "--gpu", "rtx-a6000", "--quant", "F16")
    a6000_bf16 = prefill("llama-3-8b", "--gpu", "rtx-a6000", "--quant", "BF16")
    assert a6000_bf16 == pytest.approx(a6000_f16, rel=0.02)
