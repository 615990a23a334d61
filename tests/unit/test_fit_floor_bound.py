"""`best` skips the --fit search where --fit's fill run on each GPU's bytes without its compute buffer already leaves
more than plan_fit's tolerance of weights in RAM (runtimes/llamacpp_fit_bound.py). The bound is checked here against
the real thing: the whole --fit plan (its fill with every probe's graph simulated) for the same settings, which must
keep at least the bound's bytes of weights in RAM; and where the bound says "offloaded", the whole plan is offloaded
too, so best ranks the same rows with it as without it."""

from __future__ import annotations

import pytest

from runlocal import choose
from runlocal.hardware.catalog import find_device
from runlocal.model.catalog import lookup
from runlocal.plan import quick_plan
from runlocal.runtimes import get_runtime
from runlocal.runtimes.llamacpp_fit_bound import host_weights_at_least
from runlocal.weights import with_default_quant

GiB = 1 << 30


def _case(alias: str, dev: str, count: int, ctx: int = choose.DEFAULT_CTX):
    model = lookup(alias)
    targets = choose.device_targets(find_device(dev), count)
    settings, _ = with_default_quant(model, choose._settings("llama.cpp", ctx, None, count, 1, model))
    rt = get_runtime("llama.cpp")
    whole = quick_plan(model, settings, targets, runtime=rt)      # --fit's own fill, every probe simulated
    bound = host_weights_at_least(rt, model, whole.weights, settings, targets)
    on_host = sum(d.weights for d in whole.allocation.devices if d.kind == "cpu")
    return model, settings, targets, whole, bound, on_host


# llama-3.1-70b Q4_K_M at 8,192 (best's default): the plain split misses --fit's margin on each of these, and the sum
# of weights and KV cache is under the GPUs' capacity less the margin, so choose's older bound let all three through
@pytest.mark.parametrize("dev, count, offloaded", [("rtx-3060-12gb", 4, True), ("tesla-p40", 2, True),
                                                   ("arc-b580", 4, False)])
def test_the_floor_fill_bounds_the_whole_fit_plan(dev, count, offloaded):
    model, settings, targets, whole, bound, on_host = _case("llama-3.1-70b", dev, count)
    assert bound is not None
    assert on_host >= bound            # the real fill leaves at least the blocks the floor's fill leaves
    base = choose._host_share(model, "llama.cpp", settings.quant, choose.DEFAULT_CTX)
    # the whole plan is offloaded (plan_fit's test) exactly where the bound says so here
    assert (on_host > base + choose.HOST_TOLERANCE * whole.weights.total) is offloaded
    assert (bound > base + choose.HOST_TOLERANCE * whole.weights.total) is offloaded
    if offloaded:
        # by hand: 4 x 11.75 GiB less 1 GiB margin and 590 MiB of CUDA context each is 40.7 GiB, under the 41.5 GiB of
        # weights and KV cache (the old bound compared 41.5 with 43.0); at least one 0.49 GiB block stays in RAM
        assert bound - base >= 0.45 * GiB


def test_best_ranks_the_same_with_the_bound_as_without(monkeypatch):
    """The 70B over the devices the bound acts on (and two it lets through): the same rows, the same plans."""
    model = lookup("llama-3.1-70b")
    devices = [find_device(d) for d in ("rtx-3060-12gb", "tesla-p40", "arc-b580", "rtx-3090")]
    with_bound = choose.best(model, devices=devices).to_dict()
    monkeypatch.setattr("runlocal.runtimes.llamacpp_fit_bound.host_weights_at_least", lambda *a, **k: None)
    without = choose.best(model, devices=devices).to_dict()
    assert with_bound == without
    assert {r["spec"] for r in with_bound["ranked"]} >= {"8x rtx-3060-12gb", "4x arc-b580"}


def test_no_bound_for_moe_or_one_gpu():
    model, settings, targets, whole, bound, on_host = _case("llama-3.1-8b", "rtx-3060-12gb", 1)
    assert bound is None
    moe = lookup("qwen3-30b-a3b")
    settings, _ = with_default_quant(moe, choose._settings("llama.cpp", 8192, None, 2, 1, moe))
    targets = choose.device_targets(find_device("rtx-3060-12gb"), 2)
    assert host_weights_at_least(get_runtime("llama.cpp"), moe, whole.weights, settings, targets) is None
