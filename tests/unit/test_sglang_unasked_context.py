"""SGLang with no context asked (policy17; outcomes record sglang-001, https://github.com/sgl-project/sglang/issues/29092:
Qwen3 32B on an H100 with SGLang's defaults ran, mem_fraction_static "0.828 for H100 with Qwen3 32 B model").

SGLang 0.5.23 (PyPI wheel), python/sglang/srt/managers/tp_worker.py get_worker_info: a KV pool smaller than
--context-length logs a warning and the server starts with max_req_len = min(context_len − 1, max_total_num_tokens − 1);
managers/utils.py validate_input_length refuses longer inputs. With no --context-length, context_len is config.json's
(Qwen3-32B: max_position_embeddings 40,960), so the defaults run, serving shorter requests: "tight", the largest
request said. An asked context the pool cannot hold does not run (test_sglang_short_pool_verdict.py)."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check

CONFIG_CONTEXT = 40_960          # Qwen/Qwen3-32B config.json max_position_embeddings
# Qwen3-32B config.json: 64 layers × 8 KV heads × (head_dim 128 for K + 128 for V) × 2 bytes (bf16)
CELL = 64 * 8 * (128 + 128) * 2
POST_MEM_FRACTION = 0.828        # the post's H100 + Qwen3 32B figure


def _plan(**kw):
    return check(CheckRequest(model="qwen3-32b", gpu="h100-sxm", runtime="sglang", use_measurements=False, **kw))


@pytest.mark.parametrize("frac", [None, POST_MEM_FRACTION])
def test_no_context_asked_runs_tight_at_the_longest_request_served(frac):
    plan, _ = _plan(mem_fraction_static=frac)
    a = plan.allocation
    assert a.kv_bytes_per_token == CELL == 262_144
    pool = a.kv_cache_tokens
    assert pool is not None and 1 < pool < CONFIG_CONTEXT          # the pool is short of config.json's context
    served = min(CONFIG_CONTEXT - 1, pool - 1)                     # tp_worker.py max_req_len
    assert plan.verdict == "tight" and a.refusal is None and plan.rejects is None   # the post: it ran
    assert plan.settings.ctx == served and a.max_concurrency is not None and a.max_concurrency >= 1
    assert a.compromise is not None and f"serves requests up to {served:,} tokens" in a.compromise
    assert f"config.json's context {CONFIG_CONTEXT:,}" in a.compromise
    if frac is None:    # SGLang's own default fraction (arg_groups/memory_hook.py) within 0.005 of the post's
        assert abs(plan.settings.sglang.mem_fraction_static - POST_MEM_FRACTION) <= 0.005


def test_the_same_context_asked_does_not_run():
    plan, _ = _plan(ctx=CONFIG_CONTEXT)
    assert plan.verdict == "does_not_fit" and plan.allocation.compromise is None
    assert plan.rejects is not None and "fewer than the context of 40,960" in plan.rejects


def test_the_fixes_start_from_the_context_sglang_starts_with():
    plan, _ = _plan()
    shorter = [f for f in plan.fixes if f.title.startswith("Reduce context")]
    assert shorter and all(f"context {CONFIG_CONTEXT:,} →" in f.effect for f in shorter)
    # a published AWQ checkpoint holds config.json's whole context: its command asks for it, not the served one
    awq = [f for f in plan.fixes if "AWQ" in f.title]
    assert awq and f"--context-length {CONFIG_CONTEXT}" in awq[0].command
