"""vLLM and SGLang refuse a context past the one they derive from config.json (review21 #2); each figure below is
worked by hand from the engines' own source, quoted."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from runlocal.check import CheckRequest, check
from runlocal.model import catalog
from runlocal.runtimes import context_limit
from runlocal.runtimes.context_limit import (
    sglang_context_refusal,
    sglang_derived_context_length,
    vllm_context_refusal,
    vllm_derived_max_model_len,
)

# vllm/config/model.py _get_and_verify_max_len, 0.17.1 – 0.29.0 (0.25.0 :2211-2219, 0.29.0 :2445-2469):
#     if rope_type not in ("su", "longrope", "llama3"):
#         scaling_factor = rp.get("factor", scaling_factor)
#         if rope_type == "yarn":
#             derived_max_model_len = rp["original_max_position_embeddings"]
#     derived_max_model_len *= scaling_factor
# 0.30.0 – 0.33.0 (0.30.0 :2461-2492, 0.33.0 :2610-2621; measurements/vllm_rocm/max_len.txt): `if rope_type not in
# ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"): scaling_factor = rp.get("factor",
# …)`, no reset to original — "YaRN variants leave max_position_embeddings already scaled". For the yarn rows below
# both give the same length (original × factor = max_position_embeddings in their config.json).
# sglang hf_transformers_utils.get_context_length:
#     rope_scaling_factor = rope_scaling.get("factor", 1)
#     if "original_max_position_embeddings" in rope_scaling: rope_scaling_factor = 1
#     if rope_scaling.get("rope_type", None) == "llama3": rope_scaling_factor = 1
#     ... return int(rope_scaling_factor * val)        (val: max_position_embeddings here)
CASES = [
    # model, its config.json (max_position_embeddings; rope_scaling), vLLM's derived length, SGLang's
    ("qwen3-8b", 40960, 40960),                 # 40,960; no rope_scaling: both 40,960
    ("llama-3.1-8b", 131072, 131072),           # 131,072; llama3 ×8 of 8,192: skipped by both
    ("llama-2-7b-32k", 262144, 262144),         # 32,768; linear ×8, no original: 32,768 × 8 = 262,144 in both
    ("deepseek-v3", 163840, 163840),            # 163,840; yarn ×40 of 4,096: vLLM 4,096 × 40; SGLang factor 1
    # 262,144; yarn ×64 of 4,096 (the 0905 repo's config.json as ParagEkbote/hf-model-inspector's report of
    # 2025-09-18 prints it, commit 92931b2): vLLM 4,096 × 64 = 262,144; SGLang factor 1 (original given): 262,144
    ("kimi-k2-0905", 262144, 262144),
    ("phi-3.5-mini", 131072, 131072),           # 131,072; longrope: vLLM skips it; SGLang: no "factor" key → 1
]


@pytest.mark.parametrize("name, vllm_len, sglang_len", CASES)
def test_the_derived_lengths_are_the_engines_own(name, vllm_len, sglang_len):
    model = catalog.lookup(name)
    assert vllm_derived_max_model_len(model) == vllm_len
    assert sglang_derived_context_length(model) == sglang_len
    assert vllm_context_refusal(model, vllm_len) is None and sglang_context_refusal(model, sglang_len) is None
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in (vllm_context_refusal(model, vllm_len + 1) or "")
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in (sglang_context_refusal(model, sglang_len + 1) or "")


@pytest.mark.parametrize("runtime, ctx, words", [
    ("vllm", 65536, 'User-specified max_model_len (65536) is greater than the derived max_model_len '
                    '(max_position_embeddings=40960'),
    ("vllm", 999999, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"),
    ("sglang", 65536, "User-specified context_length (65536) is greater than the derived context_length (40960)"),
])
def test_past_the_derived_length_the_plan_is_the_engines_refusal_and_no_gpu_count_is_offered(runtime, ctx, words):
    """review21 #2: `check qwen3-8b --gpu rtx-4090 -r vllm --ctx 65536 --quant awq` said ✔ fits with a command vLLM
    refuses at start-up, and at --ctx 999999 offered "Use 8 GPUs" — no GPU count lifts a config check."""
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", runtime=runtime, ctx=ctx, quant="awq"))
    assert plan.verdict == "does_not_fit"
    assert words in (plan.allocation.refusal or "")
    assert not any("GPUs" in f.title for f in plan.fixes)
    assert plan.max_context is not None and plan.max_context <= 40960


def test_within_the_derived_length_nothing_changes():
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", runtime="vllm", ctx=32768, quant="awq"))
    assert plan.verdict in ("fits", "tight") and plan.allocation.refusal is None


# review21b #2: the default context is the model's own, passed explicitly; a note names the engine's own default.
# By hand from config.json: LLaMA-2-7B-32K max_position_embeddings 32,768, rope_scaling {"type": "linear", "factor":
# 8.0} → vLLM derives 32,768 × 8 = 262,144; deepseek-coder-1.3b-instruct 16,384, {"rope_type": "linear", "factor":
# 4.0} → SGLang derives 16,384 × 4 = 65,536. At fdc2258b (before the derived length became the default) the plans
# started at 32,768 and 16,384, with --max-model-len 32768 / --context-length 16384.
@pytest.mark.parametrize("name, gpu, runtime, flag, trained, engine_default", [
    ("llama-2-7b-32k", "a100-80gb", "vllm", "--max-model-len", 32768, 262144),
    ("deepseek-coder-1.3b", "rtx-4090", "sglang", "--context-length", 16384, 65536),
])
def test_the_default_context_is_the_models_own_and_the_engines_is_named(name, gpu, runtime, flag, trained,
                                                                         engine_default):
    plan, _ = check(CheckRequest(model=name, gpu=gpu, runtime=runtime))
    assert plan.settings.ctx == trained and plan.verdict in ("fits", "tight")
    assert f"{flag} {trained}" in plan.command
    note = next(a for a in plan.allocation.assumptions if "set explicitly" in a)
    assert f"{flag} {trained:,} set explicitly" in note and f"would start at {engine_default:,}" in note
    asked, _ = check(CheckRequest(model=name, gpu=gpu, runtime=runtime, ctx=trained))
    assert not any("set explicitly" in a for a in asked.allocation.assumptions)     # the user's own --ctx: no note


# review21b #3: Qwen3-8B's model card stretches it with rope_scaling {"rope_type": "yarn", "factor": 4.0,
# "original_max_position_embeddings": 32768} over config.json's max_position_embeddings 40,960. By hand:
# vLLM 0.25.0 – 0.29.0: derived = original 32,768, × factor 4 = 131,072; from 0.30.0: yarn is excluded, derived =
# max_position_embeddings 40,960.
QWEN3_YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


@pytest.mark.parametrize("release, derived", [
    ((0, 29, 0), 4.0 * 32768),      # the last release with the old rule: original × factor = 131,072
    ((0, 30, 0), 40960),            # the first with the new rule: max_position_embeddings, no factor
])
def test_the_yarn_rule_turns_at_0_30_0(monkeypatch, release, derived):
    """The sdists 0.26.0 – 0.32.0 read (measurements/vllm_rocm/max_len.txt): 0.29.0 :2445-2469 still resets yarn to
    original × factor, 0.30.0 :2461-2492 excludes the yarn kinds. Qwen3-8B with its card's YaRN, planned at each
    release through `vllm==X` at --ctx 65,536: within 131,072 at 0.29.0, past 40,960 (refused) at 0.30.0."""
    monkeypatch.setattr(context_limit, "catalog_rope_scaling", lambda model: QWEN3_YARN)
    assert vllm_derived_max_model_len(catalog.lookup("qwen3-8b"), release) == derived
    version = ".".join(map(str, release))
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", runtime=f"vllm=={version}", ctx=65536,
                                 quant="awq"))
    refusal = plan.allocation.refusal or ""
    if derived > 65536:
        assert "derived max_model_len" not in refusal
    else:
        assert plan.verdict == "does_not_fit"
        assert "greater than the derived max_model_len (max_position_embeddings=40960" in refusal


def test_vllm_derives_a_yarn_length_by_release(monkeypatch):
    monkeypatch.setattr(context_limit, "catalog_rope_scaling", lambda model: QWEN3_YARN)
    model = catalog.lookup("qwen3-8b")
    assert vllm_derived_max_model_len(model, (0, 25, 0)) == 131072
    assert vllm_derived_max_model_len(model, (0, 33, 0)) == 40960
    assert vllm_derived_max_model_len(model) == 40960                  # None: the current release (0.33.0)
    assert vllm_context_refusal(model, 65536, (0, 25, 0)) is None
    assert "derived max_model_len (max_position_embeddings=40960" in (vllm_context_refusal(model, 65536) or "")


@pytest.mark.parametrize("release", [(0, 25, 0), (0, 29, 0), (0, 30, 0), (0, 33, 0)])
def test_the_yarn_stretch_the_refusal_offers_is_accepted_by_that_release(monkeypatch, release):
    """Apply the printed --hf-overrides to config.json (hf_overrides sets its keys on the config) and ask the same
    release again: 65,536 within 40,960 × 2 = 81,920 must now be accepted."""
    model = catalog.lookup("qwen3-8b")
    monkeypatch.setattr(context_limit, "catalog_rope_scaling", lambda m: {})
    words = vllm_context_refusal(model, 65536, release) or ""
    override = json.loads(re.search(r"--hf-overrides '([^']*)'", words).group(1))
    assert override["rope_scaling"] == {"rope_type": "yarn", "factor": 2, "original_max_position_embeddings": 40960}
    stretched = dataclasses.replace(model, max_position_embeddings=override.get("max_position_embeddings", 40960))
    monkeypatch.setattr(context_limit, "catalog_rope_scaling", lambda m: override["rope_scaling"])
    assert vllm_derived_max_model_len(stretched, release) == 81920
    assert vllm_context_refusal(stretched, 65536, release) is None
