"""vLLM's quantization checks on AMD GPUs (review20 finding 4), keyed by release (issue #18 point 1): the list each
release's sdist holds (measurements/vllm_rocm/lists.txt, read by read_rocm.py; sha256 in releases.txt) — vllm/config.py
rocm_supported_quantization up to 0.6.4, vllm/platforms/rocm.py RocmPlatform.supported_quantization from 0.6.6 — and
Platform.verify_quantization's words for any other method: "{quant} quantization is currently not supported in
rocm." (0.33.0 platforms/interface.py:1160). The RX 7900 XTX is gfx1100, the MI250X gfx90a and the MI300X gfx942
(LLVM AMDGPUUsage, the catalog's gfx_target). Session 20 read main (001eda31e), whose list matches 0.17 – 0.19."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.runtimes.published import kernel_check

XTX, MI300X = "AMD Radeon RX 7900 XTX", "AMD Instinct MI300X"


def plan(model: str, gpu: str, quant: str, runtime: str = "vllm"):
    return check(CheckRequest(model=model, gpu=gpu, runtime=runtime, quant=quant, ctx=16384,
                              use_measurements=False))[0]


def test_awq_and_gptq_load_on_rdna3_without_marlin():
    refusal, note = kernel_check("awq", XTX)
    assert refusal is None and "VLLM_USE_TRITON_AWQ=1" in note
    refusal, note = kernel_check("gptq", XTX)
    assert refusal is None and "no Marlin on ROCm" in note and "repacked" not in note
    p = plan("llama-3.1-8b", "7900xtx", "awq")
    assert p.verdict != "does_not_fit"
    assert any("Triton AWQ" in a for a in p.allocation.assumptions)
    # AWQ is absent from 0.5.5's list (config.py:267: gptq, squeezellm, fp8) and in 0.6.0's (:278)
    assert '"awq quantization is currently not supported in ROCm."' in kernel_check("awq", XTX, "vllm", "0.5.5")[0]
    assert kernel_check("awq", XTX, "vllm", "0.6.0")[0] is None


def test_modelopt_nvfp4_by_release():
    """modelopt_fp4 is absent from 0.19.1's list (platforms/rocm.py:356) and in 0.20.0's (:406) on: a ModelOpt NVFP4
    checkpoint is refused in vLLM's words before 0.20 and accepted (its FP4 kernel on RDNA 3 not checked) after."""
    old = plan("qwen3-8b", "7900xtx", "nvfp4", "vllm==0.19.0")     # nvidia/Qwen3-8B-FP4: modelopt_fp4
    assert old.verdict == "does_not_fit"
    assert '"modelopt_fp4 quantization is currently not supported in rocm."' in old.allocation.refusal
    assert "accepted from vLLM 0.20.0" in old.allocation.refusal
    current = plan("qwen3-8b", "7900xtx", "nvfp4")
    assert current.allocation.refusal is None
    assert any("modelopt_fp4 accepted by vLLM 0.33.0" in a for a in current.allocation.assumptions)


def test_bitsandbytes_only_0_17_to_0_27():
    """bitsandbytes (vLLM's in-flight 4-bit for --quant nf4) is in the ROCm list of 0.17.0 (:324) – 0.27.1 (:495) only:
    absent from 0.16.0 (:237) and again from 0.28.0 (:513), so the current release (0.33.0) refuses it."""
    for release, refused in (("0.16.0", True), ("0.17.0", False), ("0.27.1", False), ("0.28.0", True), (None, True)):
        refusal = kernel_check("nf4", XTX, "vllm", release)[0]
        assert (refusal is not None) == refused, release
        if refused:
            assert '"bitsandbytes quantization is currently not supported in rocm."' in refusal
    assert plan("llama-3.1-8b", "7900xtx", "nf4").verdict == "does_not_fit"
    assert plan("llama-3.1-8b", "7900xtx", "nf4", "vllm==0.20.0").allocation.refusal is None


def test_fp8_compute_by_target_and_release():
    """supports_fp8: 0.19.1 `any(gfx in _GCN_ARCH for gfx in ["gfx94", "gfx95", "gfx12"])`; 0.20.0 on_gfx9 (gfx90a,
    gfx942, gfx950) or on_gfx12x; 0.28.0 on_cdna or on_rdna4 (gfx1200, gfx1201); 0.33.0 on_cdna or on_rdna (gfx11,
    gfx12 not CDNA): gfx1100 counts from 0.33.0, gfx90a from 0.20.0, gfx942 always."""
    assert "supports_fp8" in kernel_check("fp8", XTX, "vllm", "0.32.0")[1]          # gfx1100 before on_rdna
    assert kernel_check("fp8", XTX) == (None, None)                                  # 0.33.0: on_rdna
    assert kernel_check("fp8", MI300X, "vllm", "0.10.0") == (None, None)             # gfx942
    assert "supports_fp8" in kernel_check("fp8", "AMD Instinct MI250X", "vllm", "0.19.1")[1]
    assert kernel_check("fp8", "AMD Instinct MI250X", "vllm", "0.20.0") == (None, None)
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
