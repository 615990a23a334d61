"""The longest context a llama.cpp plan states is one that starts when asked for, and one step more does not —
where --fit moves layers to system memory and the host's RAM is what runs out (the search guesses the room of a
context whose every --fit answer overflows the host from the host's own bytes)."""

from runlocal.check import CheckRequest, check


def _check(**fields):
    plan, _ = check(CheckRequest(model="qwen3.5-397b-a17b", runtime="llama.cpp", gpu="rtx-3060", ram="220GiB",
                                 **fields))
    return plan


def test_the_longest_context_said_starts_and_one_step_more_does_not():
    # `runlocal check qwen3.5-397b-a17b --gpu rtx-3060 --ram 220GiB`: --fit keeps 55 of 61 layers on the GPU, the
    # experts in RAM; the longest -c is where RAM runs out
    plan = _check()
    longest = plan.max_context
    assert longest and longest > 100_000
    # asked for as -c, it starts (tight: layers in RAM), and says the same longest context
    at = _check(ctx=longest)
    assert at.verdict != "does_not_fit" and at.max_context == longest
    # one cache step (256 cells) more does not start: the host is over its 220 GiB
    past = _check(ctx=longest + 256)
    assert past.verdict == "does_not_fit"
    host = next(d for d in past.allocation.devices if d.kind == "cpu")
    assert host.total > host.capacity
