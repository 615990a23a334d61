"""review19 finding 5: SGLang's refusal says "Raise --mem-fraction-static above 0.782", and the fix list tried only 0.95
(itself out of memory on a 24 GiB card). The fix search now walks the fraction up from the plan's own value (SGLang's
automatic 0.704 here) and offers the smallest that runs, or down from a value the user set."""

from __future__ import annotations

from runlocal.check import CheckRequest, check

ASK = dict(model="qwen3-32b", gpu="rtx-4090", runtime="sglang", ctx=8192, quant="awq")


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def _pool(p) -> int:
    return p.allocation.kv_cache_tokens or 0


def test_the_smallest_fraction_that_holds_the_context_is_offered():
    p = plan(**ASK)
    assert p.verdict == "does_not_fit" and "above 0.782" in p.allocation.refusal
    fix = next(f for f in p.fixes if f.title.startswith("Raise mem_fraction_static to "))
    value = float(fix.title.rsplit(" ", 1)[1])
    assert f"--mem-fraction-static {value:g}" in fix.command
    # above the refusal's own minimum; the pool at that value holds the 8,192 tokens asked, 0.01 less does not
    # (qwen3-32b: 64 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 256 KiB per token of pool)
    assert value > 0.782
    at, below = plan(**ASK, mem_fraction_static=value), plan(**ASK, mem_fraction_static=round(value - 0.01, 2))
    assert at.verdict != "does_not_fit" and _pool(at) >= 8192
    assert below.verdict == "does_not_fit"
    assert at.allocation.kv_bytes_per_token == 64 * 8 * 128 * 2 * 2


def test_a_fraction_set_too_high_is_lowered_not_no_fix():
    # at 0.95 the weights, pool and activations overrun the 23.6 GiB card; a value a little lower runs
    p = plan(**ASK, mem_fraction_static=0.95)
    assert p.verdict == "does_not_fit"
    fix = next(f for f in p.fixes if f.title.startswith("Lower mem_fraction_static to "))
    value = float(fix.title.rsplit(" ", 1)[1])
    assert 0.782 < value < 0.95
    assert plan(**ASK, mem_fraction_static=value).verdict != "does_not_fit"
    assert plan(**ASK, mem_fraction_static=round(value + 0.01, 2)).verdict == "does_not_fit"
