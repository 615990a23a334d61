"""Which kernel ggml-cuda multiplies a prompt batch of integer-quantized weights with on an NVIDIA card, and what a plan
prices it at (hardware/backend_speed.nvidia_mmq, nvidia_peak.prompt_matmul_type).

The rule as ggml-org/llama.cpp's mmq.cu ggml_cuda_should_use_mmq reads for NVIDIA (and PR #8075's description, the
change that made it the default, 2024-06: "mul_mat_q instead of FP16 cuBLAS GEMM is used unless there is no int8
tensor core MMQ implementation available but FP16 tensor cores are (V100, RDNA3) or the __dp4a instruction is
unavailable (P100 or older)"):

  type has no MMQ kernel                        → false   (IQ1_M, TQ1_0, TQ2_0: not in mmq.cu's switch)
  turing_mma_available(cc)        (cc >= 7.5)   → true
  highest compiled arch < GGML_CUDA_CC_DP4A (610) → false (P100 6.0, Maxwell 5.x)
  NVIDIA: !fp16_mma_hardware_available(cc) || ne11 < MMQ_DP4A_MAX_BATCH_SIZE (64)
          fp16_mma_hardware_available: cc >= GGML_CUDA_CC_VOLTA (700) → Pascal 6.1 true at any batch, Volta only < 64

false → ggml_cuda_mul_mat_cublas: the weights converted to F16 where fast_fp16_hardware_available (cc >= 6.0, not 6.1),
else F32.
"""

from __future__ import annotations

import pytest

from runlocal.hardware.backend_speed import cublas_type, moe_prefill_gap, nvidia_mmq
from runlocal.hardware.catalog import find_device
from runlocal.hardware.nvidia_peak import prompt_matmul_type


@pytest.mark.parametrize(("cc", "quant", "ncols", "mmq"), [
    ("7.0", "Q4_0", 512, False),     # V100: FP16 tensor cores, no int8 ones, 512 >= 64 → cuBLAS
    ("7.0", "Q4_K_M", 64, False),    # ne11 < 64 is false at exactly 64
    ("7.0", "Q4_K_M", 63, True),     # … and true below
    ("6.0", "Q4_0", 16, False),      # P100: no __dp4a → cuBLAS at any batch
    ("5.2", "Q8_0", 512, False),     # Maxwell: likewise
    ("6.1", "Q4_0", 512, True),      # P40 / GTX 10xx: dp4a, no FP16 tensor cores → MMQ at any batch
    ("7.5", "Q6_K", 512, True),      # Turing: int8 tensor cores
    ("8.9", "IQ4_XS", 2048, True),
    ("12.0", "MXFP4", 512, True),
    ("8.6", "IQ1_M", 512, False),    # no MMQ kernel for IQ1_M on any card
    ("8.6", "F16", 512, None),       # float weights: not this rule's (cuBLAS / mmf already, priced as float)
    ("8.6", "BF16", 512, None),
])
def test_the_rule_as_mmq_cu_reads(cc, quant, ncols, mmq):
    assert nvidia_mmq(cc, quant, ncols) is mmq


def test_cublas_dequantizes_to_f16_where_fp16_is_fast():
    # fast_fp16_hardware_available: NVIDIA cc >= 6.0 and cc != 6.1 (GP102/104/106's FP16 runs at 1/64 of FP32)
    assert [cublas_type(cc) for cc in ("5.2", "6.0", "6.1", "7.0", "8.6")] == ["F32", "F16", "F32", "F16", "F16"]


def test_a_v100_plan_prices_q4_0_as_f16_and_an_a100_keeps_mmq():
    v100, a100 = find_device("v100-sxm2-32gb"), find_device("a100-sxm4-80gb")
    assert v100.compute_capability == "7.0" and v100.int8_tops is None     # catalog: no int8 tensor figure
    assert prompt_matmul_type("Q4_0", True, v100, "cuda", 512) == "F16"
    assert prompt_matmul_type("Q4_0", True, v100, "cuda", 32) == "Q4_0"       # -ub 32: MMQ (dp4a)
    assert prompt_matmul_type("Q4_0", True, v100, "vulkan", 512) == "Q4_0"    # ggml-cuda's rule only
    assert prompt_matmul_type("Q4_0", True, a100, "cuda", 512) == "Q4_0"


def test_moe_on_volta_takes_the_per_expert_fallback():
    # ggml_cuda_mul_mat_id: should_use_mmq(type, cc, ne12 = tokens, n_experts) — NVIDIA's lines ignore n_experts — then
    # should_use_mmf (float types only), then the synchronous fallback: declined, as on ROCm
    why = moe_prefill_gap(64, "cuda", quant="Q4_0", ubatch=512, compute_capability="7.0")
    assert why and "per-expert fallback" in why and "ggml_cuda_should_use_mmq" in why
    assert moe_prefill_gap(64, "cuda", quant="Q4_0", ubatch=32, compute_capability="7.0") is None
    assert moe_prefill_gap(64, "cuda", quant="Q4_0", ubatch=512, compute_capability="8.0") is None
    assert moe_prefill_gap(64, "cuda", quant="BF16", ubatch=512, compute_capability="7.0") is None
    assert moe_prefill_gap(0, "cuda", quant="Q4_0", ubatch=512, compute_capability="7.0") is None


def _prefill_step(gpu: str, quant: str) -> dict:
    from runlocal.check import check
    from runlocal.request import CheckRequest

    plan, _ = check(CheckRequest(model="llama-2-7b", quant=quant, gpu=gpu, parallel=1))
    return {s["label"]: s for s in plan.to_dict()["explain"]}["prefill speed"]


def test_v100_plan_by_hand_and_against_the_scoreboard():
    # Llama-2-7B on a V100 SXM2: the Q4_0 prompt runs the same cuBLAS F16 GEMMs as the F16 weights (the weights
    # dequantized first), so the two plans' prompt rates are equal; the CUDA scoreboard's V100 32 GB row (discussion
    # #15013, flash attention on, llama-bench's default since b9437: 2,973.8 t/s) is read within 10 %
    q4, f16 = _prefill_step("v100-sxm2-32gb", "Q4_0"), _prefill_step("v100-sxm2-32gb", "F16")
    assert q4["value"] == f16["value"]
    assert "125 fp16 TFLOPS" in q4["formula"] and "int8 TOPS" not in q4["formula"]
    assert "ggml_cuda_should_use_mmq" in q4["formula"] and "cuBLAS" in q4["formula"]
    assert float(q4["value"].split()[0]) == pytest.approx(2973.78, rel=0.10)
    a100 = _prefill_step("a100-sxm4-80gb", "Q4_0")
    assert "int8 TOPS" in a100["formula"] and "kernel path" not in a100["formula"]
