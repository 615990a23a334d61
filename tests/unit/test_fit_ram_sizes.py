"""--fit reads the GPUs only, so its search is kept per launch without the host's size: the RAM sizes
settle_assumed_ram tries (`runlocal check MODEL --gpu …` with no --ram) share one search. Each plan made that way is
the plan made from nothing at that RAM size."""

from __future__ import annotations

import pytest

from runlocal.check import _inputs
from runlocal.request import CheckRequest
from runlocal.runtimes import get_runtime, llamacpp
from runlocal.weights import estimate, with_default_quant

RAM_SIZES = ("8G", "24G", "48G", "96G")


def _clear() -> None:
    for memo in (llamacpp._LAYER_OUTCOMES, llamacpp._FITS, llamacpp._ALLOCATIONS, llamacpp._BUFFERS):
        memo.clear()


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
@pytest.mark.parametrize("alias,gpu,ctx", [("qwen3-30b-a3b", "rtx-3060", 32768), ("llama-3.1-70b", "rtx-4090", 8192)])
def test_plans_at_each_ram_size_equal_plans_made_from_nothing(runtime, alias, gpu, ctx):
    planner = get_runtime(runtime)
    shared, alone = [], []
    _clear()
    for ram in RAM_SIZES:
        spec, settings, targets, _ = _inputs(CheckRequest(model=alias, runtime=runtime, gpu=gpu, ram=ram))
        settings, _ = with_default_quant(spec, settings)
        shared.append(planner.allocate(spec, estimate(spec, settings.quant), settings.with_(ctx=ctx), targets))
    for ram in RAM_SIZES:
        _clear()
        spec, settings, targets, _ = _inputs(CheckRequest(model=alias, runtime=runtime, gpu=gpu, ram=ram))
        settings, _ = with_default_quant(spec, settings)
        alone.append(planner.allocate(spec, estimate(spec, settings.quant), settings.with_(ctx=ctx), targets))
    assert shared == alone
    # the RAM sizes differ in what the host holds against, not in where --fit put the layers
    assert len({a.settings.llamacpp.n_gpu_layers for a in alone}) == 1
    assert any(a.devices[-1].capacity != alone[0].devices[-1].capacity for a in alone)
