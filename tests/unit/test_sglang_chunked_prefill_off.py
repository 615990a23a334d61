"""SGLang turns chunked prefill off for some multimodal classes, by release (review23 finding 4;
runtimes/sglang_versions.py CHUNKED_OFF_READ, read in each wheel of measurements/sglang_versions/wheels.txt):

- 0.4.4 model_runner.py:253 / :262: architectures == ["MllamaForConditionalGeneration"] or ["Qwen2VLForConditionalGeneration"];
- 0.4.5 :283, 0.4.6 :316: every multimodal model ("Automatically turn off --chunked-prefill-size for multimodal model.");
- 0.4.7 on: a class on configs/model_config.py is_multimodal_chunked_prefill_supported's list (Grok1V, Grok1A,
  LlavaLlama, Mllama, CLIP; MossVL from 0.5.11) — 0.5.23 arg_groups/model_hook.py:1031.

It runs after mem_fraction_static was set from the GPU tier's chunk (0.5.23 arg_groups/pipeline.py:218 before :352),
so the fraction is unchanged; the scheduler then admits the first request whole (schedule_policy.py:1626), a prefill
batch of up to max(max_prefill_tokens 16,384, --context-length) tokens (arg_groups/fields/schedule.py:71).
Expected figures by hand: Llama 3.2 11B Vision's text model has hidden 4096 and intermediate 14336 (config.json), so
one prefill token's activations in the planner's rule are (4 × 4096 + 3 × 14336) × 2 B = 118,784 B.
"""

from __future__ import annotations

from runlocal.check import CheckRequest, check

MiB = 1 << 20
PER_TOKEN = (4 * 4096 + 3 * 14336) * 2          # 118,784 B (TP 1)


def _plan(model, runtime, ctx):
    return check(CheckRequest(model=model, runtime=runtime, gpu="h100", ctx=ctx, use_measurements=False))[0]


def _step(plan, label):
    return next((st for st in plan.allocation.steps if st.label == label), None)


def test_mllama_prefills_the_whole_prompt_in_one_pass():
    plan = _plan("llama-3.2-11b-vision", "sglang==0.4.6", 131072)
    # 0.4.6 on an H100: no prefill graphs before 0.5.11, decode graphs 160 × 2 MiB outside the budget
    assert _step(plan, "activations + CUDA graphs").value == f"{131072 * PER_TOKEN + 160 * 2 * MiB:,} B"
    off = _step(plan, "chunked prefill off")
    assert off.value == "131,072 tokens a pass" and off.source == "sglang 0.4.6 model_executor/model_runner.py:316"


def test_a_short_context_still_batches_max_prefill_tokens():
    # 0.5.23 on an H100: decode graphs 256 × 2 MiB (no prefill graphs for a multimodal class off the allowlist)
    plan = _plan("llama-3.2-11b-vision", "sglang", 8192)
    assert _step(plan, "activations + CUDA graphs").value == f"{16384 * PER_TOKEN + 256 * 2 * MiB:,} B"


def test_the_fraction_keeps_the_tiers_chunk():
    # (81,920 − (512 + 1.5 × 8192 + 1/8 × 1024 + 2 × 256)) / 81,920 = 68,480 / 81,920 = 0.8359 → 0.836, then × the
    # vision factor; with the chunk taken as off (max_prefill_tokens 16,384) it would be 0.686
    step = _step(_plan("llama-3.2-11b-vision", "sglang", 8192), "mem_fraction_static")
    assert "0.836 from (GPU 81,920 MiB − reserved 13,440 MiB)" in step.formula


def test_by_release_and_class():
    def off(model, runtime):
        return _step(_plan(model, runtime, 32768), "chunked prefill off") is not None

    assert off("qwen2.5-vl-7b", "sglang==0.4.5") and off("qwen2.5-vl-7b", "sglang==0.4.6")   # every multimodal model
    assert not off("qwen2.5-vl-7b", "sglang==0.4.4")        # 0.4.4: Mllama and Qwen2-VL (not 2.5) by name
    assert off("llama-3.2-11b-vision", "sglang==0.4.4")
    assert not off("qwen2.5-vl-7b", "sglang==0.4.7") and not off("qwen2.5-vl-7b", "sglang")   # not on the list
    assert off("llama-3.2-11b-vision", "sglang==0.5.9") and off("llama-3.2-11b-vision", "sglang")
    assert not off("llama-3.1-8b", "sglang==0.4.6")          # a text model: is_multimodal is false
    chunked = _plan("qwen2.5-vl-7b", "sglang", 32768)
    assert _step(chunked, "activations + CUDA graphs").formula.startswith("chunk 8192 ×")


def test_the_pass_is_bounded_by_the_kv_pool():
    # a prompt is written into the KV pool as it is prefilled: on a 24 GB card the pool (a few thousand tokens at
    # 131,072 asked) bounds the pass, not the context
    plan = check(CheckRequest(model="llama-3.2-11b-vision", runtime="sglang==0.4.4", gpu="rtx-4090", ctx=131072,
                              use_measurements=False))[0]
    pool = int(_step(plan, "KV pool tokens").value.replace(",", ""))
    assert 0 < pool < 16384
    assert _step(plan, "chunked prefill off").value == f"{pool:,} tokens a pass"
