"""review18 finding 7, read against the transformers 5.23.0 wheel the planner models (runtimes/transformers.py):
- AWQ, GPTQ and bitsandbytes load on a CPU-only machine (AWQ / GPTQ through gptqmodel, whose torch kernels run on any
  device; bitsandbytes 0.50.2 lists "cpu" in supported_torch_devices): no refusal. The "GPU is required to run AWQ
  quantized model" RuntimeError is transformers 4.x's (≤ 4.45 always; 4.46–4.53 unless the config asks for IPEX).
- a pre-quantized fine-grained FP8 checkpoint is dequantized to bf16 at load with no CUDA GPU / XPU and on a CUDA GPU
  below compute capability 8.9 (quantizers/quantizer_finegrained_fp8.py validate_environment), so its weights take
  2 B a parameter there: Qwen3-8B has 8,190,735,360 parameters (config.json / the safetensors index) → 16,381,470,720 B.
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check

QWEN3_8B_PARAMS = 8_190_735_360


def _plan(gpu, quant):
    return check(CheckRequest(model="qwen3-8b", runtime="transformers", quant=quant, gpu=gpu, ram="32G",
                              use_measurements=False))[0]


@pytest.mark.parametrize("gpu", ["none", "rtx-3090", "a100-80gb"])        # CPU; compute capability 8.6 and 8.0
def test_fp8_checkpoint_is_planned_in_bf16_where_transformers_dequantizes_it(gpu):
    plan = _plan(gpu, "fp8")
    assert plan.allocation.devices[0].weights == 2 * QWEN3_8B_PARAMS == 16_381_470_720
    assert any(a.startswith("FP8 checkpoint dequantized to bf16 at load") for a in plan.allocation.assumptions)


@pytest.mark.parametrize("gpu", ["rtx-4090", "h100"])                     # compute capability 8.9 and 9.0
def test_fp8_checkpoint_stays_fp8_on_an_fp8_gpu(gpu):
    plan = _plan(gpu, "fp8")
    # one byte per linear weight plus 16-bit embeddings / norms / lm_head: well under 2 B a parameter
    assert plan.allocation.devices[0].weights < 1.2 * QWEN3_8B_PARAMS
    assert not any("dequantized" in a for a in plan.allocation.assumptions)


@pytest.mark.parametrize("quant", ["awq", "nf4", "int8"])
def test_awq_and_bitsandbytes_are_not_refused_on_a_cpu(quant):
    plan = _plan("none", quant)
    assert plan.allocation.refusal is None and plan.verdict != "does_not_fit"
