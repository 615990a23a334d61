"""vLLM's quantization checks on AMD GPUs (review20 finding 4), from vllm/platforms/rocm.py (vllm-project/vllm
001eda31e): RocmPlatform.supported_quantization holds awq, gptq (their *_marlin variants "will be overwritten" with
them), fp8, compressed-tensors, fbgemm_fp8, gguf, quark, mxfp4, petit_nvfp4, torchao, bitsandbytes, and
Platform.verify_quantization refuses any other with "{quant} quantization is currently not supported in rocm.";
verify_quantization sets VLLM_USE_TRITON_AWQ=1 for AWQ; supports_fp8 is true for gfx94*, gfx95*, gfx12* only.
The RX 7900 XTX is gfx1100 and the MI300X gfx942 (LLVM AMDGPUUsage, the catalog's gfx_target)."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.runtimes.published import kernel_check


def plan(model: str, gpu: str, quant: str):
    return check(CheckRequest(model=model, gpu=gpu, runtime="vllm", quant=quant, ctx=16384,
                              use_measurements=False))[0]


def test_awq_and_gptq_load_on_rdna3_without_marlin():
    refusal, note = kernel_check("awq", "AMD Radeon RX 7900 XTX")
    assert refusal is None and "VLLM_USE_TRITON_AWQ=1" in note
    refusal, note = kernel_check("gptq", "AMD Radeon RX 7900 XTX")
    assert refusal is None and "gptq_marlin is overwritten with gptq" in note and "repacked" not in note
    p = plan("llama-3.1-8b", "7900xtx", "awq")
    assert p.verdict != "does_not_fit"
    assert any("Triton AWQ" in a for a in p.allocation.assumptions)


def test_modelopt_nvfp4_is_refused_in_vllms_words():
    p = plan("qwen3-8b", "7900xtx", "nvfp4")     # nvidia/Qwen3-8B-FP4: a ModelOpt checkpoint (modelopt_fp4)
    assert p.verdict == "does_not_fit"
    assert '"modelopt_fp4 quantization is currently not supported in rocm."' in p.allocation.refusal


def test_fp8_compute_by_target():
    assert "supports_fp8" in kernel_check("fp8", "AMD Radeon RX 7900 XTX")[1]     # gfx1100: none
    assert kernel_check("fp8", "AMD Instinct MI300X") == (None, None)               # gfx942: FP8 compute
    # an NVIDIA card keeps its compute-capability rule: Ampere runs FP8 weight-only (vLLM docs "FP8 W8A8")
    assert "W8A16" in kernel_check("fp8", "NVIDIA GeForce RTX 3090")[1]


def hint(model: str, gpu: str) -> str:
    p = check(CheckRequest(model=model, gpu=gpu, runtime="vllm", use_measurements=False))[0]
    return next(st.formula for st in p.steps if st.label == "checkpoint")


def test_quant_hint_offers_what_the_card_loads():
    """The hint under a stored checkpoint offers only the --quant words vLLM loads on the card (fixes20a's noticed-and-
    left: "nvfp4" offered on an RX 7900 XTX). By the sources above: NVFP4 is not offered on gfx1100 (ModelOpt's
    modelopt_fp4 is outside supported_quantization; no FP4 GEMM on RDNA3), while awq / gptq / fp8 are in the list. On
    NVIDIA, vLLM's own minimum capabilities: awq.py AWQConfig.get_min_capability 75, fp8.py Fp8Config 75 (W8A16
    Marlin), marlin_utils_fp4.py is_fp4_marlin_supported 80 — a V100 (7.0) gets none of fp8 / awq / nvfp4, a T4 (7.5)
    fp8 and awq but not nvfp4, an RTX 4090 (8.9) all four."""
    assert hint("llama-3.1-8b", "7900xtx").endswith("--quant fp8, awq or gptq plans one")
    assert hint("llama-3.1-8b", "4090").endswith("--quant fp8, awq, gptq or nvfp4 plans one")
    assert hint("llama-3.1-8b", "t4").endswith("--quant fp8, awq or gptq plans one")
    assert hint("llama-3.1-8b", "v100").endswith("--quant gptq plans one")
    # a unified-memory AMD chip is an AMD GPU too (Radeon 8060S, gfx1151)
    assert hint("llama-3.1-8b", "ryzen-ai-max-395-128gb").endswith("--quant fp8, awq or gptq plans one")
