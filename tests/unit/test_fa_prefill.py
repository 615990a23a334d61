"""The CUDA FlashAttention prompt term (hardware/fa_prefill.py): its arithmetic worked by hand, where it applies, and
what a plan does with it."""

import pytest

from runlocal.hardware import fa_prefill as FA
from runlocal.hardware import speed as S
from runlocal.hardware import token_work as TW
from runlocal.hardware.catalog import find_device
from runlocal.hardware.targets import targets_from_options
from runlocal.model.catalog import lookup
from runlocal.plan import make_plan
from runlocal.runtimes import Settings


def test_the_term_worked_by_hand_for_llama_8b_at_depth_32768_on_an_rtx_3090():
    # llama-bench pp512@d32768: a prompt token attends on average to 32768 + 512/2 = 33024 cached tokens.
    # Llama 3.1 8B: 32 layers, 32 query heads, K and V 128 wide (config.json of meta-llama/Llama-3.1-8B).
    # Q·Kᵀ per layer: 2 FLOPs × 32 heads × 128 × 33024 = 270,532,608; × 32 layers = 8,657,043,456. softmax·V: the same.
    kq = 2 * 32 * 128 * 33024 * 32
    assert kq == 8_657_043_456
    # RTX 3090 (NVIDIA GA102 whitepaper): 71 TFLOPS f16 with F32 accumulate (catalog 71.2), 284.7 dense INT8 TOPS;
    # its F16-accumulate rate is INT8 / 2 = 142.35 TFLOPS. Q·Kᵀ accumulates in F32 (fattn-mma-f16.cuh T_C_KQ: float),
    # softmax·V in F16 (T_C_VKQ: half2).
    kq_rate, vkq_rate = 71.2e12, 284.7e12 / 2
    eff = 0.5
    seconds = (kq / kq_rate + kq / vkq_rate) / eff
    # 8,657,043,456 / 71.2e12 = 121.59 µs; / 142.35e12 = 60.82 µs; sum 182.41 µs; ÷ 0.5 = 364.8 µs
    assert seconds == pytest.approx(364.8e-6, rel=1e-3)

    term = FA.fa_attention(lookup("llama-3.1-8b"), find_device("rtx-3090"), 33024, clock=1.0, eff=eff)
    assert term.kq_flops == kq and term.vkq_flops == kq
    assert term.kq_tflops == pytest.approx(71.2) and term.vkq_tflops == pytest.approx(142.35, rel=1e-3)
    assert term.seconds_per_token == pytest.approx(seconds, rel=1e-3)


def test_the_two_products_sum_to_the_attention_flops_and_split_for_mla():
    llama = lookup("llama-3.1-8b")
    kq, vkq = TW.attention_product_flops(llama, 1000)
    assert kq + vkq == TW.attention_flops_per_token(llama, 1000) == 4 * 32 * 128 * 1000 * 32
    # DeepSeek-V2-Lite under llama.cpp's MLA: 16 heads, K 576 wide (512 latent + 64 RoPE), V 512 wide, 27 layers
    kq, vkq = TW.attention_product_flops(lookup("deepseek-v2-lite"), 1000)
    assert (kq, vkq) == (2 * 16 * 576 * 1000 * 27, 2 * 16 * 512 * 1000 * 27)


def test_hopper_runs_the_kernel_at_the_mma_sync_share_and_full_rate_parts_accumulate_alike():
    # fattn-mma-f16.cuh issues mma.sync, which reaches 65 % of Hopper's datasheet rate (nvidia_peak.MMA_SYNC_SHARE,
    # arXiv:2501.12084); the H100's F16 rates with F32 and F16 accumulate are both 989.4 TFLOPS (dense)
    f32, f16 = FA.mma_rates(find_device("h100-sxm"), clock=1.0)
    assert f32 == pytest.approx(989.4 * 0.65) and f16 == pytest.approx(f32)


@pytest.mark.parametrize(("device", "backend", "flash", "expected"), [
    ("rtx-3090", "cuda", True, True),
    ("rtx-2080-ti", "cuda", True, True),        # Turing: turing_mma_available
    ("v100-sxm2-32gb", "cuda", True, True),     # Volta: the MMA kernel since PR #17505
    ("rtx-3090", "cuda", False, False),         # -fa off: attention stays ATTN_FACTOR's
    ("rtx-3090", "vulkan", True, False),        # another backend's kernels
    ("rx-7900-xtx", "rocm", True, False),       # HIP: not derived here
])
def test_where_the_term_applies(device, backend, flash, expected):
    assert FA.applies(find_device(device), backend, True, flash) is expected
    assert not FA.applies(find_device(device), backend, False, flash)      # not a llama.cpp / Ollama plan


def _plan(flash_attn):
    targets, _ = targets_from_options("rtx-3090", None, "64G")
    settings = Settings(ctx=40960, prompt_tokens=32768).with_(flash_attn=flash_attn)
    return make_plan(lookup("llama-3.1-8b"), settings, targets, with_fixes=False)


def test_a_cuda_plan_prices_a_long_prompt_with_the_term_and_its_seconds_add_up():
    on, off = _plan("auto"), _plan("off")
    p_on = on.speed["prefill_tokens_per_s"]
    p_off = off.speed["prefill_tokens_per_s"]
    assert p_on > 1.5 * p_off       # issue #18: ATTN_FACTOR priced this attention about twice as slow
    # with the term, the token's seconds are the matmuls' + the layers' + the kernel's: remove the kernel's and the
    # rest is the same prompt priced with no attention at all
    model, dev = lookup("llama-3.1-8b"), find_device("rtx-3090")
    term = FA.fa_attention(model, dev, 32768 / 2, clock=1.0, eff=S.FA_MMA_EFF)
    peak = S.prefill_peak(dev, "Q4_K_M")
    fit = S.prefill_entry("nvidia-gddr/cuda", dev.compute_capability, S.FIT) or S.constants("nvidia-gddr", "cuda")
    rest = (2 * TW.active_matmul_params(model) / (S.prefill_eff(fit, "Q4_K_M") * peak * 1e12)
            + model.n_layers * fit.prefill_layer_us / 1e6)
    assert 1 / p_on == pytest.approx(rest + term.seconds_per_token, rel=0.02)


def _explain(args: list[str]) -> str:
    from typer.testing import CliRunner

    from runlocal.cli import app

    result = CliRunner().invoke(app, ["check", *args, "--explain"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_explain_names_every_factor_inside_the_attention_rates():
    # review15: the rates were printed as bare products. RTX 4090 (AD102 whitepaper): 165.2 TFLOPS f16 with F32
    # accumulate, twice that with F16 accumulate (a GeForce card), and a power-limited clock share; the printed
    # product must be the catalog figure times the named factors
    import re
    text = _explain(["llama-3.1-8b", "--gpu", "rtx-4090", "-c", "40k", "--prompt-tokens", "32k"])
    m = re.search(r"÷ \(165\.2 TFLOPS f16 × ([\d.]+) \(power-limited clock\) = ([\d.]+), F32 accumulate\)", text)
    assert m and float(m.group(2)) == pytest.approx(165.2 * float(m.group(1)), abs=0.2)
    m2 = re.search(r"\(([\d.]+) × 2 \(FP16 accumulate runs at 2× on this card\) = ([\d.]+), F16 accumulate\)", text)
    assert m2 and float(m2.group(2)) == pytest.approx(2 * float(m2.group(1)), abs=0.2)


def test_a_vllm_plan_says_it_borrows_llama_cpps_kernel():
    # review15: vLLM runs its own FlashAttention kernels; with no vLLM prompt record at depth the llama.cpp term is
    # borrowed, and --explain says so. H100 (GH100 whitepaper): 989.4 dense fp16 TFLOPS, mma.sync at 0.65 of it
    text = _explain(["llama-3.1-8b", "--gpu", "h100-sxm", "--runtime", "vllm", "-c", "32k", "--prompt-tokens", "32k"])
    assert "989.4 TFLOPS f16 × 0.65 (mma.sync's share on Hopper) = 643.1" in text
    assert "borrowed for vllm, which has no prompt record at depth" in text


def test_an_fp8_plan_names_its_rate_fp8():
    # review15c: vLLM's fp8 on an H100 is priced at the dense FP8 figure (1,978.9 TFLOPS, GH100 whitepaper — the same
    # number as its dense INT8 TOPS), and the unit says fp8, not int8
    text = _explain(["qwen3.5-35b-a3b", "--gpu", "h100-sxm", "--runtime", "vllm", "-q", "fp8"])
    assert "1978.9 fp8 TFLOPS" in text and "1978.9 int8 TOPS" not in text
