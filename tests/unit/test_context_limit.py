"""vLLM and SGLang refuse a context past the one they derive from config.json (review21 #2); each figure below is
worked by hand from the engines' own source, quoted."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.model import catalog
from runlocal.runtimes.context_limit import (
    sglang_context_refusal,
    sglang_derived_context_length,
    vllm_context_refusal,
    vllm_derived_max_model_len,
)

# vllm/config/model.py _get_and_verify_max_len:
#     if rope_type not in ("su", "longrope", "llama3"):
#         scaling_factor = rp.get("factor", scaling_factor)
#         if rope_type == "yarn":
#             derived_max_model_len = rp["original_max_position_embeddings"]
#     derived_max_model_len *= scaling_factor
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
