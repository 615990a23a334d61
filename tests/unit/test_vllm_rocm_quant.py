"""vLLM's quantization checks on AMD GPUs (review20 finding 4), keyed by release (issue #18 point 1): the list each
release's sdist holds (measurements/vllm_rocm/lists.txt, read by read_rocm.py; sha256 in releases.txt) — vllm/config.py
rocm_supported_quantization up to 0.6.4, vllm/platforms/rocm.py RocmPlatform.supported_quantization from 0.6.6 — and
Platform.verify_quantization's words for any other method: "{quant} quantization is currently not supported in
rocm." (0.33.0 platforms/interface.py:1160). The RX 7900 XTX is gfx1100, the MI250X gfx90a and the MI300X gfx942
(LLVM AMDGPUUsage, the catalog's gfx_target). Session 20 read main (001eda31e), whose list matches 0.17 – 0.19."""

from __future__ import annotations

import pytest

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


def hint(model: str, gpu: str, runtime: str = "vllm") -> str:
    p = check(CheckRequest(model=model, gpu=gpu, runtime=runtime, use_measurements=False))[0]
    return next(st.formula for st in p.steps if st.label == "checkpoint")


def test_quant_hint_offers_what_the_card_loads():
    """The hint under a stored checkpoint offers only the --quant words vLLM loads on the card (fixes20a's noticed-and-
    left: "nvfp4" offered on an RX 7900 XTX). By the sources above: NVFP4 is not offered on gfx1100 (ModelOpt's
    modelopt_fp4 is outside supported_quantization; no FP4 GEMM on RDNA3), while awq / gptq / fp8 are in the list. On
    NVIDIA, vLLM's own minimum capabilities: awq.py AWQConfig.get_min_capability 75, fp8.py Fp8Config 75 (W8A16
    Marlin), marlin_utils_fp4.py is_fp4_marlin_supported 80 — a V100 (7.0) gets none of fp8 / awq / nvfp4, a T4 (7.5)
    fp8 and awq but not nvfp4, an RTX 4090 (8.9) all four."""
    assert hint("llama-3.1-8b", "7900xtx").endswith(EMULATED)
    assert hint("llama-3.1-8b", "4090").endswith("--quant fp8, awq, gptq or nvfp4 plans one")
    assert hint("llama-3.1-8b", "t4").endswith("--quant fp8, awq or gptq plans one")
    assert hint("llama-3.1-8b", "v100").endswith("--quant gptq plans one")
    # a unified-memory AMD chip is an AMD GPU too (Radeon 8060S, gfx1151)
    assert hint("llama-3.1-8b", "ryzen-ai-max-395-128gb").endswith(EMULATED)


EMULATED_WORD = "nvfp4 (emulated on ROCm: dequantized to bf16 at each matmul, slower)"
EMULATED = f"--quant fp8, awq, gptq or {EMULATED_WORD} plans one"


@pytest.mark.parametrize("release, words", [
    # Qwen3-8B's published checkpoints: Qwen/Qwen3-8B-FP8 (quant_method fp8), AWQ (awq), ModelOpt NVFP4
    # (modelopt_fp4); gptq made at home (gptq). By ROCM_QUANT's sources, read in each release: gptq always (0.4.1
    # config.py:128); fp8 from 0.5.5 (0.5.4
    # config.py:210 lacks it, 0.5.5 :267 lists it); awq from 0.6.0 (0.5.5 :267 lacks it, 0.6.0 :278 lists it);
    # ModelOpt NVFP4 (modelopt_fp4) from 0.20.0 (0.19.1 platforms/rocm.py:356 lacks it, 0.20.0 :406 lists it)
    ("0.5.0", ["gptq"]),
    ("0.5.5", ["fp8", "gptq"]),
    ("0.6.0", ["fp8", "awq", "gptq"]),
    ("0.19.1", ["fp8", "awq", "gptq"]),
    ("0.20.0", ["fp8", "awq", "gptq", EMULATED_WORD]),
])
def test_quant_hint_on_rocm_follows_the_release(release, words):
    """review21b #4: the hint offered fp8 / awq under releases that refuse them on ROCm, and never nvfp4, which
    0.20.0 on accepts (emulated)."""
    from runlocal.model import catalog
    from runlocal.weights import hint_quants

    assert hint_quants(catalog.lookup("qwen3-8b"), "vllm", (XTX,), release) == words


def test_the_plan_passes_its_release_to_the_hint():
    """Llama-3.1-8B under 0.5.0 on gfx1100: its FP8 checkpoint is compressed-tensors (from 0.6.2), AWQ from 0.6.0,
    so only gptq is offered (the hint once offered all four at every release)."""
    assert hint("llama-3.1-8b", "7900xtx", "vllm==0.5.0").endswith("--quant gptq plans one")


@pytest.mark.parametrize("release, offered", [("0.6.2", False), ("0.8.5", False), ("0.9.0", False), ("0.9.1", True)])
def test_compressed_tensors_nvfp4_from_its_scheme(release, offered):
    """mends21b: compressed-tensors is on ROCm's list from 0.6.2, but its NVFP4 scheme is not. Read in the sdists
    (sha256 in measurements/vllm_rocm/releases.txt): `tar tzf vllm-X.tar.gz | grep compressed_tensors/schemes/.*fp4`
    lists nothing in 0.7.3 – 0.8.5, only compressed_tensors_w4a16_nvfp4.py (weight-only) in 0.9.0, and
    compressed_tensors_w4a4_nvfp4.py from 0.9.1; 0.9.0's _get_scheme_from_parts then ends at compressed_tensors.py:391
        raise NotImplementedError(
            "No compressed-tensors compatible scheme was found.")
    and 0.9.1's w4a4 scheme runs off CUDA as emulation (w4a4_nvfp4.py:25 `if not current_platform.is_cuda():
    return False`, :39 "Running emulations."). Llama-3.1-8B has no ModelOpt NVFP4 checkpoint, so its nvfp4 is the
    compressed-tensors folder (weights.HINT_QUANTS)."""
    from runlocal.model import catalog
    from runlocal.weights import hint_quants

    words = hint_quants(catalog.lookup("llama-3.1-8b"), "vllm", (XTX,), release)
    assert (EMULATED_WORD in words) is offered
    refusal, _ = kernel_check("ct-nvfp4", XTX, "vllm", release)
    if offered:
        assert refusal is None
    else:
        assert '"No compressed-tensors compatible scheme was found."' in refusal
