"""Review14b's findings on the session's new options, each from the reviewer's command: a prompt of a few tokens is
held to reading the weights (not faster than decoding), its time to first token keeps its digits in the JSON, -ot is
printed before --cpu-moe (llama.cpp's first match wins, and the plan lets -ot win), and counts refuse true/false and
fractions."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.errors import InputError
from runlocal.request import CheckRequest, validate_request


def _speed(**kw):
    plan, _ = check(CheckRequest(**kw))
    return plan.speed


def test_a_one_token_prompt_is_no_faster_than_a_decode_step():
    sp = _speed(model="llama-3.1-70b", gpu="h100", ctx="8192", prompt_tokens=1)
    # one token: every weight read once, like a decode step at a short context (which also reads 512 tokens of KV)
    assert sp["prefill_tokens_per_s"] <= 1.05 * sp["decode_short_tokens_per_s"]
    # 70B Q4_K_M ≈ 42.5 GB over 3,350 GB/s: at least ~13 ms however the compute would price it
    assert sp["time_to_first_token_s"] >= 0.0127


def test_a_long_prompt_is_not_held():
    short = _speed(model="llama-3.1-8b", gpu="rtx-4090", ctx="8192")
    assert short["prefill_tokens_per_s"] > 20 * short["decode_short_tokens_per_s"]


def test_the_time_to_first_token_keeps_its_digits():
    sp = _speed(model="qwen2.5-0.5b", gpu="m4 max", prompt_tokens=1)
    assert sp["time_to_first_token_s"] > 0
    assert abs(sp["time_to_first_token_s"] - 1 / sp["prefill_tokens_per_s"]) < 1e-3 * sp["time_to_first_token_s"]


def test_override_tensor_is_printed_before_cpu_moe():
    plan, _ = check(CheckRequest(model="qwen3-30b-a3b", gpu="rtx-3060", ctx="8192", cpu_moe=True,
                                 override_tensor=(r"blk\.(0|1|2|3)\.ffn_(up|down|gate)_exps=CUDA0",)))
    assert plan.command.index(" -ot ") < plan.command.index(" --cpu-moe")
    # the plan lets -ot win: four layers' experts on the GPU, more than --cpu-moe alone keeps there
    alone, _ = check(CheckRequest(model="qwen3-30b-a3b", gpu="rtx-3060", ctx="8192", cpu_moe=True))
    gpu = lambda p: next(d.weights for d in p.allocation.devices if d.kind != "cpu")  # noqa: E731
    assert gpu(plan) > gpu(alone) + (1 << 30)


@pytest.mark.parametrize("field, value, words", [("prompt_tokens", True, "expected a number"),
                                                 ("parallel", False, "expected a number"),
                                                 ("prompt_tokens", "512.7", "not a whole number of tokens"),
                                                 ("ctx", "4096.5", "not a whole number of tokens"),
                                                 ("ctx", "inf", "not a token count"),
                                                 ("prompt_tokens", "1e400", "not a token count")])
def test_counts_refuse_switches_and_fractions(field, value, words):
    with pytest.raises(InputError, match=words):
        req = CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", **{field: value})
        validate_request(req)
        check(req)
