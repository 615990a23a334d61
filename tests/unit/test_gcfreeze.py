"""The API server freezes what each plan kept out of the cyclic collector (runlocal.gcfreeze). That is safe only
because a plan makes no reference cycles: checked here on the questions users ask, and the sweep that frees a
cycle frozen by mistake."""

from __future__ import annotations

import gc
import weakref

import pytest

from runlocal import gcfreeze
from runlocal.check import CheckRequest, check


@pytest.fixture
def collector_off():
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was:
        gc.enable()


@pytest.mark.parametrize("model,runtime,gpu", [
    ("llama-3.1-8b", "llama.cpp", "rtx-4090"),
    ("qwen3-30b-a3b", "ollama", "rtx-3060"),        # partial offload: --fit's searches, the fixes
    ("gemma-3-27b", "vllm", "rtx-4090"),             # refused: the fixes' searches
    ("mixtral-8x7b", "transformers", "rtx-3060"),
])
def test_a_check_leaves_no_cyclic_garbage(collector_off, model, runtime, gpu):
    check(CheckRequest(model=model, runtime=runtime, gpu=gpu, use_measurements=False))
    check(CheckRequest(model=model, runtime=runtime, gpu=gpu, ctx="32768", use_measurements=False))
    assert gc.collect() == 0     # nothing only the collector could free: reference counting freed it all


class _Node:
    pass


@pytest.fixture
def short_period(monkeypatch):
    """Sweeps every 5 plans: each sweep is a full collection, 2,000 of them would make the test slow."""
    monkeypatch.setattr(gcfreeze, "SWEEP_EVERY", 5)
    monkeypatch.setattr(gcfreeze, "_sweep_at", gcfreeze._plans + 5)


def test_a_cycle_frozen_by_mistake_is_freed_by_the_next_sweep(short_period):
    gcfreeze.freeze_long_lived()
    while gcfreeze.sweep_if_due() is False:     # to just after a sweep
        gcfreeze.freeze_after_plan()
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    gcfreeze.freeze_after_plan()          # the cycle is garbage, and frozen with the rest
    gc.collect()
    assert gone() is not None             # collections skip the permanent generation
    assert not gcfreeze.sweep_if_due()    # one plan since the sweep: not due
    while not gcfreeze.sweep_if_due():    # SWEEP_EVERY plans later
        gcfreeze.freeze_after_plan()
    assert gone() is None
    gc.unfreeze()


def test_sweeps_come_at_a_fixed_period_so_frozen_garbage_stays_bounded(short_period):
    gcfreeze.freeze_long_lived()
    while gcfreeze.sweep_if_due() is False:
        gcfreeze.freeze_after_plan()
    gaps = []
    for _ in range(3):
        n = 0
        while not gcfreeze.sweep_if_due():
            gcfreeze.freeze_after_plan()
            n += 1
        gaps.append(n)
    assert gaps == [gcfreeze.SWEEP_EVERY] * 3     # not a doubling schedule
    gc.unfreeze()
