"""Flash attention for MLA caches whose K and V rows differ (review17c finding 5): where the build / card has no GPU
kernel, no "turn on flash attention" fix and no quantized-V fix (runtimes/mla_flash.py). Sources, in the llama.cpp
trees Ollama vendored (ollama/ollama at the tags): v0.6.0's src/llama.cpp "flash_attn requires n_embd_head_k ==
n_embd_head_v - forcing off"; v0.6.7's ggml-cuda.cu supports_op: K ≠ V → false; v0.7.0's (de4c07f9 = b5359): only
576 / 512 with cc ≥ Ampere (PR #13306); Turing from PR #13435 (ggml c91952e7: supports_op's `cc < GGML_CUDA_CC_AMPERE`
dropped; read without at ggml's sync of b5361, with at its sync of b5421), any CUDA card from PR #16492 (ggml
0b56d427; Ollama v0.12.4's b6646 without, v0.12.11's b6840 with); K 192 → false in every tree; Ollama 0.32.13's log of
deepseek-coder-v2:16b-lite (K 192 / V 128): "Flash Attention is assigned to device CPU".
"""

from __future__ import annotations

import pytest

from runlocal.runtimes.mla_flash import mla_flash_blocked


@pytest.mark.parametrize("cached,build,backend,ccs,blocked", [
    ((192, 128), 5000, "metal", [None], True),      # before PR #12801: no backend has a kernel for K ≠ V
    ((192, 128), None, "cuda", [8.9], True),         # every head's K/V: no CUDA kernel in any build read
    ((192, 128), None, "metal", [None], False),      # Metal has K 192 / V 128 from PR #12801
    ((576, 512), 5200, "cuda", [8.9], True),         # the latent before PR #13306 (assumed up to b5358)
    ((576, 512), 5359, "cuda", [8.9], False),        # b5359 = de4c07f9 has PR #13306
    ((576, 512), 5359, "cuda", [7.5], True),         # … for compute capability ≥ 8.0 only
    ((576, 512), 5361, "cuda", [7.5], True),         # cf0a43bb = b5361, ggml's sync of 2025-05-13: still Ampere+
    ((576, 512), 5400, "cuda", [7.5], True),         # between b5361 and b5421: PR #13435's build not pinned, withheld
    ((576, 512), 5421, "cuda", [7.5], False),        # d30cb5a7 = b5421 (ggml's sync of 2025-05-19) has PR #13435
    ((576, 512), 6646, "cuda", [7.0], True),         # Volta at b6646 (Ollama 0.12.4): !turing_mma_available → none
    ((576, 512), 6646, "cuda", [8.6, 6.1], True),    # one Pascal card among several is enough to withhold it
    ((576, 512), 6840, "cuda", [6.1], False),        # b6840 (Ollama 0.12.11) has PR #16492's tile kernel: any card
    ((576, 512), None, "cuda", [6.1], False),        # the current build, likewise (ggml's tree of 2026-08)
    ((576, 512), None, "cuda", [7.5], False),        # the current build on Turing
    ((576, 576), 4000, "cuda", [8.9], False),        # equal rows: nothing to say
    (None, 4000, "cuda", [8.9], False),              # no MLA layer
])
def test_which_builds_and_cards_run_flash_attention_for_differing_rows(cached, build, backend, ccs, blocked):
    assert bool(mla_flash_blocked(cached, build, backend, ccs)) == blocked


def _plan(runtime: str, gpu: str = "rtx-4090", model: str = "deepseek-v2-lite", ctx: int = 65536):
    from runlocal.check import CheckRequest, check

    plan, _ = check(CheckRequest(model=model, runtime=runtime, gpu=gpu, ctx=str(ctx), use_measurements=False))
    return plan


def _withheld(titles: list[str]) -> list[str]:
    return [t for t in titles if "flash attention" in t.lower() or "quantize the kv" in t.lower()]


def test_b5000_offers_no_flash_or_quantized_v_fix_for_deepseek_v2_lite():
    # review17c: `check deepseek-v2-lite --gpu rtx-4090 --ctx 65536 -r llama.cpp==b5000` offered "Quantize the KV cache
    # to q8_0, with flash attention on (-fa)" and "Turn on flash attention (-fa) and …", which that build cannot run
    plan = _plan("llama.cpp==b5000")
    titles = [f.title for f in plan.fixes]
    assert titles and not _withheld(titles)
    step = next(s for s in plan.steps if s.label == "flash attention (MLA)")
    assert "K 192 ≠ V 128" in step.source and "PR #12801" in step.source


def test_a_later_build_on_ampere_keeps_the_flash_fixes_and_turing_does_not():
    # b5359 caches the latent (K 576 / V 512; runtimes/versions.py llamacpp_mla_cache) and has PR #13306; the RTX 3060
    # is compute capability 8.6: the flash-attention fixes stay
    plan = _plan("llama.cpp==b5359", ctx=163840, gpu="rtx-3060-12gb")
    assert not any(s.label == "flash attention (MLA)" for s in plan.steps)
    assert _withheld([f.title for f in plan.fixes])
    turing = _plan("llama.cpp==b5359", ctx=163840, gpu="rtx-2080-ti")      # compute capability 7.5
    assert any(s.label == "flash attention (MLA)" and "7.5" in s.source for s in turing.steps)
    assert not _withheld([f.title for f in turing.fixes])


def test_current_llamacpp_deepseek_plans_are_untouched():
    # the current build caches the latent alone and has PR #13306: no step, the same plan as main's
    plan = _plan("llama.cpp")
    assert not any(s.label == "flash attention (MLA)" for s in plan.steps)


def test_turing_gets_the_latent_kernel_from_b5421_and_pascal_from_b6840():
    # PR #13435 (Turing) is in b5421's tree (ggml's sync of d30cb5a7, 2025-05-19): the RTX 2080 Ti (7.5) keeps the
    # flash-attention fixes there; a GTX 1080 Ti (6.1) is withheld them until PR #16492's tile kernel (b6840 read)
    turing = _plan("llama.cpp==b5421", ctx=163840, gpu="rtx-2080-ti")
    assert not any(s.label == "flash attention (MLA)" for s in turing.steps)
    pascal = _plan("llama.cpp==b6646", ctx=163840, gpu="gtx-1080-ti")
    assert any(s.label == "flash attention (MLA)" and "PR #16492" in s.source for s in pascal.steps)
    assert not _withheld([f.title for f in pascal.fixes])
    assert not any(s.label == "flash attention (MLA)" for s in _plan("llama.cpp==b6840", ctx=163840,
                                                                      gpu="gtx-1080-ti").steps)
