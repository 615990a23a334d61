"""The longest context a llama.cpp plan states is one that starts when asked for, and one step more does not —
where --fit moves layers to system memory and the host's RAM is what runs out (the search guesses the room of a
context whose every --fit answer overflows the host from the host's own bytes)."""

from runlocal.check import CheckRequest, check


def _check(**fields):
    plan, _ = check(CheckRequest(model="qwen3.5-397b-a17b", runtime="llama.cpp", gpu="rtx-3060", ram="220GiB",
                                 **fields))
    return plan


def test_the_longest_context_said_starts_and_one_step_more_does_not():
    # `runlocal check qwen3.5-397b-a17b --gpu rtx-3060 --ram 220GiB`: --fit moves layers, the experts in RAM; the
    # longest -c is where RAM runs out
    plan = _check()
    longest = plan.max_context
    assert longest and longest > 32_768
    # asked for as -c, it starts (tight: layers in RAM). (Not asserted: that it states the same longest context.
    # This hybrid model's GPU use is not monotone in -ngl, so --fit's false-position search lands on different
    # -ngl at nearby contexts (common/fit.cpp; test_fit_history) and whether the host holds the rest is not
    # monotone in -c either: the max-context search, which starts at the context asked for, can end elsewhere.)
    at = _check(ctx=longest)
    assert at.verdict != "does_not_fit"
    # one cache step (256 cells) more does not start: the host is over its 220 GiB
    past = _check(ctx=longest + 256)
    assert past.verdict == "does_not_fit"
    host = next(d for d in past.allocation.devices if d.kind == "cpu")
    assert host.total > host.capacity
