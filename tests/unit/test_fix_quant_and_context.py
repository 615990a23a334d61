"""A smaller GGUF together with a shorter context, the layers left to llama-server --fit, where neither alone starts
(review18 finding 2): Llama-3.1-70B at -c 131,072 on an RTX 4060 with 32 GiB of RAM said "No fix … a smaller model",
while -q Q3_K_M -c 8192 runs. Each fix is asked again of the planner, at its own context and one cache step (256
cells) more; the step between them is the KV cache's, by hand: 80 layers × 2 (K, V) × 8 KV heads × 128 × 2 B
(f16) = 327,680 B a token, × 256 = 80 MiB."""

from __future__ import annotations

import re

import pytest

from runlocal.check import CheckRequest, check

KV_PER_TOKEN = 80 * 2 * 8 * 128 * 2
ASK = dict(model="llama-3.1-70b", gpu="rtx-4060", ram="32G", use_measurements=False)


def _total(plan) -> int:
    return sum(d.total for d in plan.allocation.devices)


@pytest.fixture(scope="module")
def plan():
    return check(CheckRequest(ctx=131072, **ASK))[0]


def test_the_pair_is_offered_and_each_edge_holds(plan):
    assert plan.verdict == "does_not_fit"
    pairs = [f for f in plan.fixes if "and reduce context to" in f.title]
    assert len(pairs) >= 1, [f.title for f in plan.fixes]
    for fix in pairs:
        quant = re.search(r"-hf \S+:(\S+)", fix.command).group(1)
        ctx = int(re.search(r"-c (\d+)", fix.command).group(1))
        assert "-ngl" not in fix.command               # --fit places the layers, as the search planned
        assert f"→ {ctx:,} tokens" in fix.effect and "verdict does not fit → tight" in fix.effect
        at, _ = check(CheckRequest(ctx=ctx, quant=quant, **ASK))
        past, _ = check(CheckRequest(ctx=ctx + 256, quant=quant, **ASK))
        assert at.verdict in ("tight", "fits") and past.verdict == "does_not_fit"
        # one cache step more is the KV cache's 80 MiB (and a compute buffer a little larger): the edge is the RAM's
        assert 256 * KV_PER_TOKEN <= _total(past) - _total(at) < 256 * KV_PER_TOKEN + (8 << 20)
        ram = next(d for d in at.allocation.devices if d.kind == "cpu")
        assert ram.total <= ram.capacity == 32 << 30


def test_the_review_s_shorter_context_is_within_the_offered_one(plan):
    # the review ran -q Q3_K_M -c 8192 and saw it start: the fix's context is at least that
    q3 = next(f for f in plan.fixes if ":Q3_K_M" in f.command and "reduce context" in f.title)
    assert int(re.search(r"-c (\d+)", q3.command).group(1)) >= 8192
