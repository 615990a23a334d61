"""SGLang on unified-memory devices: NVIDIA's (DGX Spark, Jetson) are CUDA GPUs to it, AMD APUs have no SGLang kernels
(nor has any AMD card outside gfx942 / gfx950).

The independent source is outcomes record sglang-016 (measurements/outcomes/records.jsonl): zai-org/GLM-4.7-FP8
(355B parameters) ran under SGLang on "4x DGX Spark (GB10, 128GB each)", TP 4, image lmsysorg/sglang:spark, serving
1, 4 and 8 concurrent requests (BTankut/dgx-spark-sglang-moe-configs FORUM_POST.md at 76d61bf)."""

import pytest

from runlocal.check import CheckRequest, check
from runlocal.runtimes.base import Target
from runlocal.runtimes.sglang import SGLang

GiB = 1 << 30


def _glm47_on_sparks(**kw):
    return check(CheckRequest(model="glm-4.7", gpu="4xdgx-spark", runtime="sglang", quant="fp8", tp=4,
                              enforce_eager=True, use_measurements=False, **kw))[0]


def test_glm47_fp8_on_four_dgx_sparks_at_tp4_starts_as_the_record_says():
    r = _glm47_on_sparks()
    assert r.verdict in ("fits", "tight"), r.refusal
    sparks = [d for d in r.allocation.devices if d.kind == "unified"]
    assert len(sparks) == 4                             # four Sparks, TP 4 — not one
    # the post's figure by hand: 355e9 parameters × 1 byte (FP8 e4m3) / TP 4 = 82.65 GiB on each Spark; the plan
    # counts the real tensors (lm_head and norms stay 16-bit, the embedding is split), so within 3 %
    by_hand = 355e9 / 4 / GiB
    for d in sparks:
        assert abs(d.weights / GiB - by_hand) / by_hand < 0.03
        assert d.total <= d.capacity                    # each Spark's 128 GB, not the four summed
    # the post served 8 concurrent requests: the KV pool holds 8 requests of 4,096 tokens at least
    assert r.allocation.kv_cache_tokens >= 8 * 4096


def test_a_probed_nvidia_unified_gpu_not_in_the_catalog_is_a_cuda_gpu():
    # nvidia-smi names a GB10 "NVIDIA GB10"; `check` from a probe adds " #0"
    probed = Target("NVIDIA GB10 #0", "unified", 100 * GiB, 273.0, 128 * GiB)
    assert SGLang()._gpus([probed, Target("CPU RAM (unified)", "cpu", 128 * GiB)]) == [probed]


def test_an_amd_apu_is_refused_for_sgl_kernels_rocm_targets_and_counted_whole():
    # sgl-kernel/setup_rocm.py aborts on an auto-detected target other than gfx942 / gfx950; a Strix Halo is gfx1151
    # (AMD's gpu-arch-specs table: Radeon 8060S, gfx1151)
    r = check(CheckRequest(model="qwen3-8b", gpu="2xryzen-ai-max-395-128gb", runtime="sglang", tp=2, ctx=8192,
                           use_measurements=False))[0]
    assert r.verdict == "does_not_fit"
    assert "gfx942 / gfx950" in r.allocation.refusal and "gfx1151" in r.allocation.refusal
    assert len([d for d in r.allocation.devices if d.kind == "unified"]) == 2


def test_an_apple_unified_target_given_to_the_planner_directly_is_no_gpu():
    # check refuses SGLang on a Mac before planning (registry.not_on_apple); the planner alone keeps it off CUDA
    apple = Target("Apple M4 Max 128GB", "unified", 96 * GiB, 546.0, 128 * GiB)
    assert SGLang()._gpus([apple]) == []


@pytest.mark.parametrize("gpu, gfx, refused", [
    ("7900xtx", "gfx1100", True),        # a discrete RDNA3 card: the same gate as an APU (mends21b)
    ("mi300x", "gfx942", False),
])
def test_a_discrete_amd_card_outside_sgl_kernels_targets_is_refused(gpu, gfx, refused):
    """sgl-kernel/setup_rocm.py (sgl-project/sglang 01b582cb), quoted:
        if amdgpu_target not in ["gfx942", "gfx950"]:
            print(f"Warning: Unsupported GPU architecture detected '{amdgpu_target}'. Expected 'gfx942' or 'gfx950'.")
            ... if explicit_target is None: sys.exit(1)
    and the published ROCm wheels: 3rdparty/amd/wheel/sgl-kernel/build_rocm.sh AMDGPU_TARGET="gfx942;gfx950". The RX
    7900 XTX is gfx1100 and the MI300X gfx942 (AMD's gpu-arch-specs table). SGLang 0.5.19 imports sgl_kernel's ops on
    ROCm (layers/activation.py:109-110), so the 7900 XTX plan is refused in the build script's words; the MI300X plans."""
    r = check(CheckRequest(model="llama-3.1-8b", gpu=gpu, runtime="sglang", ctx=8192, use_measurements=False))[0]
    refusal = r.allocation.refusal or ""
    if refused:
        assert r.verdict == "does_not_fit"
        assert f"\"Warning: Unsupported GPU architecture detected '{gfx}'. Expected 'gfx942' or 'gfx950'.\"" in refusal
    else:
        assert r.verdict != "does_not_fit" and "sgl-kernel" not in refusal


def test_a_refused_amd_card_names_the_runtimes_that_run_on_it_not_more_devices():
    """The RX 7900 XTX (gfx1100) refusal is sgl-kernel's build, not memory: the plan fits the card's 24 GiB in every
    figure (19.11 GiB planned), so "more or larger devices" would be wrong. The refusal names the runtimes runlocal
    plans on an AMD GPU with their --runtime, and the answer's "No fix" line points to them."""
    from io import StringIO

    from rich.console import Console

    from runlocal.render.text import no_fix_phrase, render_plan

    r = check(CheckRequest(model="llama-3.1-8b", gpu="7900xtx", runtime="sglang", use_measurements=False))[0]
    assert all(d.total <= d.capacity for d in r.allocation.devices)
    assert "Runtimes that load it on gfx1100: vLLM on ROCm (--runtime vllm plans it)" in r.allocation.refusal
    phrase = no_fix_phrase(r)
    assert "another runtime" in phrase and "larger devices" not in phrase
    out = StringIO()
    render_plan(r, Console(file=out, width=200))
    assert "No fix: no setting sglang offers gets past its refusal here — another runtime (above)." in out.getvalue()
    # a memory refusal keeps its own line
    big = check(CheckRequest(model="llama-3.1-70b", gpu="rtx-4090", runtime="sglang", use_measurements=False))[0]
    assert big.verdict == "does_not_fit" and "another runtime" not in no_fix_phrase(big)


def test_vllm_is_named_only_on_the_chips_its_rocm_requirements_list():
    # vllm docs gpu.rocm.inc.md: "Radeon RX 7900 series (gfx1100/1101) … Ryzen AI MAX / AI 300 Series (gfx1151/1150)";
    # the Radeon 780M (gfx1103) is not listed, so only llama.cpp and Ollama are named for it
    from runlocal.runtimes.base import Target
    from runlocal.runtimes.sglang import _rocm_target_refusal

    def named(gpu: str) -> str:
        return _rocm_target_refusal([Target(gpu, "gpu", 16 * 2**30)]) or ""

    assert "vLLM on ROCm" in named("AMD Radeon RX 7900 XTX")
    m780 = named("AMD Radeon 780M 16GB (Ryzen 7 7840U/8840U)")
    assert "gfx1103" in m780 and "vLLM" not in m780 and "--runtime llama.cpp" in m780
