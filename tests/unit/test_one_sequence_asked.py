"""vLLM --max-num-seqs 1 and SGLang --max-running-requests 1 are values the engines honour (vllm/engine/arg_utils.py
--max-num-seqs; sglang server_args.py --max-running-requests), kept apart from "not given" (registry.Engine
.auto_parallel: Settings keeps PARALLEL_AUTO for both): the plan is for one sequence and the command carries the flag;
an unset flag still plans the engine's own default."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.request import CheckRequest

GiB = 1024 ** 3


def ask(runtime: str, parallel: int | None):
    return check(CheckRequest(model="qwen3-8b", gpu="h100", runtime=runtime, ctx=8192, parallel=parallel,
                              use_measurements=False))


@pytest.mark.parametrize("runtime, flag", [("vllm", "--max-num-seqs"), ("sglang", "--max-running-requests")])
def test_one_is_planned_and_written(runtime, flag):
    one, notes = ask(runtime, 1)
    assert f"{one.command} ".count(f" {flag} 1 ") == 1
    assert not [n for n in notes if "planned as not given" in n]
    unset = ask(runtime, None)[0]
    assert flag not in unset.command
    assert one.to_dict()["memory"] != unset.to_dict()["memory"]
    assert one.settings.parallel == 1 and unset.settings.parallel == -1


def test_vllm_one_sequence_samples_one_row():
    """vLLM's profile run (v1/worker/gpu_model_runner.py profile_run): the forward over max_num_batched_tokens, then
    the dummy sampler over max_num_seqs rows of logits; the peak is the larger. `vllm serve` on an H100 (≥ 70 GiB,
    not an A100: engine/arg_utils.py _set_default_args) defaults to 8192 tokens and 1024 sequences.
    Qwen3-8B (config.json): hidden 4096, intermediate 12288, vocab 151,936, 36 layers × 8 KV heads × head_dim 128.
    By hand, with runtimes/vllm.py's fitted constants (6 B per token per feature; 38.5 B per logit, five H100 logs):
      forward        = 8192 × 6 × (4096 + 12288)      =   805,306,368 B
      sampler 1024   = 1024 × 151,936 × 38.5          = 5,989,924,864 B   (the default's peak)
      sampler 1      =    1 × 151,936 × 38.5          =     5,849,536 B   (under the forward: the peak is the forward)
    so --max-num-seqs 1 frees 5,989,924,864 − 805,306,368 = 5,184,618,496 B, which the KV pool takes, to within one
    block of 16 tokens × 36 × 8 × 128 × 2 (K, V) × 2 B = 16 × 147,456 B (each pool is a whole number of blocks)."""
    one, default = ask("vllm", 1)[0], ask("vllm", None)[0]
    assert default.allocation.devices[0].compute == 1024 * 151_936 * 385 // 10 == 5_989_924_864
    assert one.allocation.devices[0].compute == 8192 * 6 * (4096 + 12288) == 805_306_368
    per_token = 36 * 8 * 128 * 2 * 2
    assert one.allocation.kv_bytes_per_token == per_token
    freed = 5_989_924_864 - 805_306_368
    grown = one.allocation.devices[0].kv_cache - default.allocation.devices[0].kv_cache
    assert abs(grown - freed) < 16 * per_token
    assert one.allocation.kv_cache_tokens > default.allocation.kv_cache_tokens
    two = ask("vllm", 2)[0]       # 2 rows are under the forward too: the same memory, its own flag
    assert two.allocation.devices[0].compute == 805_306_368 and "--max-num-seqs 2" in two.command


def test_one_caps_the_pooled_requests():
    from runlocal.plan import requests_at_once

    at_once = requests_at_once(ask("vllm", 1)[0])
    assert at_once is not None and at_once["requests"] == 1 and "--max-num-seqs 1 caps it" in at_once["text"]
    unset = requests_at_once(ask("vllm", None)[0])
    assert unset is not None and unset["requests"] == unset["fits_at_context"] > 1


def test_llama_cpp_keeps_one_apart_from_auto():
    plan, notes = ask("llama.cpp", 1)
    assert "--parallel 1" in plan.command and not [n for n in notes if "planned as not given" in n]
