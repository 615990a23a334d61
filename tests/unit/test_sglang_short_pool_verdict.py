"""Review 16, finding 6: SGLang with a KV pool shorter than the context asked starts — managers/tp_worker.py only
warns, and the scheduler rejects (or, with --allow-auto-truncate, truncates) a longer request — so its verdict line
must not say it "refuses to start", and a reason line says what it does. vLLM in the same place refuses to start
("… is larger than the maximum number of tokens that can be stored in KV cache"), which stays its refusal."""

from __future__ import annotations

from asking import run_cli

from runlocal.check import CheckRequest, check
from runlocal.render.text import VERDICT_MEANING, verdict_meaning


def test_sglang_starts_and_rejects_longer_requests():
    # the context asked (config.json's 40,960, given as --context-length): no context asked is policy17's
    # test_sglang_unasked_context.py — SGLang then serves the shorter requests, "tight"
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", runtime="sglang", ctx=40_960))
    a = plan.allocation
    # Qwen3-8B's 40,960-token context on a 4090: the pool holds fewer tokens than one request, no refusal
    assert plan.verdict == "does_not_fit" and a.refusal is None
    assert a.kv_cache_tokens is not None and a.kv_cache_tokens < plan.settings.ctx == 40_960
    assert plan.rejects is not None and plan.rejects.startswith(f"starts, but its KV pool holds {a.kv_cache_tokens:,}")
    assert "refuses to start" not in verdict_meaning(plan)
    assert plan.to_dict()["rejects"] == plan.rejects and plan.to_dict()["refusal"] is None
    out = run_cli("check", "qwen3-8b", "--gpu", "rtx-4090", "--runtime", "sglang", "--ctx", "40960").stdout
    assert "refuses to start" not in out and "the runtime starts, but its KV pool cannot hold one request" in out


def test_vllm_in_the_same_place_still_refuses_to_start():
    # asked or not: vLLM's check_enough_kv_cache_memory reads max_model_len, config.json's where none is asked
    for ctx in (None, 40_960):
        plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", runtime="vllm", ctx=ctx))
        assert plan.verdict == "does_not_fit" and plan.allocation.refusal and plan.rejects is None
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", runtime="vllm"))
    assert plan.verdict == "does_not_fit" and plan.allocation.refusal and plan.rejects is None
    assert verdict_meaning(plan) == VERDICT_MEANING["does_not_fit"]


def test_a_plan_that_fits_rejects_nothing():
    # 4K: the RTX 4090's pool at CUDA's 23.64 GiB (devices.json) holds ~7K tokens of qwen3-8b, short of 8K
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", runtime="sglang", ctx="4k"))
    assert plan.verdict != "does_not_fit" and plan.rejects is None and plan.to_dict()["rejects"] is None
