"""Flash attention for MLA caches whose K and V rows differ (review17c finding 5): where the build / card has no GPU
kernel, no "turn on flash attention" fix and no quantized-V fix (runtimes/mla_flash.py). Sources, in the llama.cpp
trees Ollama vendored (ollama/ollama at the tags): v0.6.0's src/llama.cpp "flash_attn requires n_embd_head_k ==
n_embd_head_v - forcing off"; v0.6.7's ggml-cuda.cu supports_op: K ≠ V → false; v0.7.0's (de4c07f9 = b5359): only
576 / 512 with cc ≥ Ampere (PR #13306); K 192 → false in every tree; Ollama 0.32.13's log of
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
    ((576, 512), None, "cuda", [7.5], False),        # the current build: not read against it (PR #13435: Turing)
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
