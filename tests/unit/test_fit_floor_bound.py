"""`best` skips the --fit search where --fit's fill run on each GPU's bytes without its compute buffer already leaves
more than plan_fit's tolerance of weights in RAM (runtimes/llamacpp_fit_bound.py). The bound is checked here against
the real thing: the whole --fit plan (its fill with every probe's graph simulated) for the same settings, which must
keep at least the bound's bytes of weights in RAM; and where the bound says "offloaded", the whole plan is offloaded
too, so best ranks the same rows with it as without it."""

from __future__ import annotations

from dataclasses import replace

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


# --- the max-context search's bound (plan._layered_max_context): --fit over several GPUs keeps every layer at no -c

def _check(alias: str, gpu: str, ram: str, ctx: str | None = None):
    from runlocal.check import CheckRequest, check

    plan, _ = check(CheckRequest(model=alias, runtime="llama.cpp", gpu=gpu, ram=ram, ctx=ctx, use_measurements=False))
    return plan


def _fresh_at(plan, ctx: int):
    """The settings the all-on-GPU search plans at ``ctx``: --fit placing the layers (-ngl, -ts, -ot its own)."""
    return plan.settings.with_(ctx=ctx, n_gpu_layers=None, tensor_split=(), override_tensor=(), n_cpu_moe=0)


@pytest.mark.parametrize("alias, gpu, ram", [("mixtral-8x7b", "2xrtx-3060", "64GiB"),
                                             ("llama-3.1-70b", "2xrtx-3090", "64GiB"),
                                             ("gemma-3-27b", "2xrtx-3060", "64GiB")])
def test_one_gpu_holding_every_layer_is_under_every_split(alias, gpu, ram):
    from runlocal.runtimes.llamacpp_swa import as_llamacpp_loads

    plan = _check(alias, gpu, ram)
    rt, targets = plan.planner, list(plan.searched_on)
    gpus = [t for t in targets if t.kind != "cpu"]
    model = as_llamacpp_loads(plan.model)
    for ctx in (256, 4096, 32768):
        whole = rt._as_build_reads(_fresh_at(plan, ctx)).with_(n_gpu_layers=model.n_layers + 1)
        one = [replace(gpus[0], capacity=sum(g.capacity for g in gpus)), *(t for t in targets if t.kind == "cpu")]
        merged = rt.floor(model, plan.weights, whole, one)[0]
        for split in ((), (1.0, 1.0), (3.0, 1.0), (1.0, 5.0)):
            floors = rt.floor(model, plan.weights, whole.with_(tensor_split=split), targets)[:len(gpus)]
            # every split holds the same tensors and caches, plus a CUDA context (590 MiB) on each GPU beyond one
            assert merged <= sum(floors), (ctx, split)


def test_every_layer_surely_moved_by_hand_and_the_search_it_skips_fails():
    from runlocal.runtimes.llamacpp import FIT_MARGIN
    from runlocal.runtimes.llamacpp_fit_bound import every_layer_surely_moved

    plan = _check("mixtral-8x7b", "2xrtx-3060", "64GiB")
    rt, targets = plan.planner, list(plan.searched_on)
    # by hand: the Q4_K_M file's 28.4 GB of weights, less the token embedding kept in RAM (32,000 x 4,096, at most
    # 2 B each: 262 MB), is past 2 x (11.75 GiB - 1 GiB) = 21.5 GiB before any KV cache or CUDA context
    gpus = [t for t in targets if t.kind != "cpu"]
    assert plan.weights.total - 32_000 * 4_096 * 2 > sum(g.capacity - FIT_MARGIN for g in gpus)
    assert every_layer_surely_moved(rt, plan.model, plan.weights, _fresh_at(plan, 256), targets)
    assert plan.max_context_basis == "layers_in_ram"
    # the search the bound skips, made anyway: no context keeps every layer
    from runlocal.search import keeps_every_layer, longest_context

    assert longest_context(rt, plan.model, plan.weights, _fresh_at(plan, None), targets, hi=4096,
                           ok=keeps_every_layer) is None


def test_the_bound_lets_through_a_model_that_keeps_every_layer():
    from runlocal.runtimes.llamacpp_fit_bound import every_layer_surely_moved

    plan = _check("llama-3.1-70b", "2xrtx-3090", "64GiB")
    assert not every_layer_surely_moved(plan.planner, plan.model, plan.weights, _fresh_at(plan, 256),
                                        list(plan.searched_on))
    # main before session 19's change (2278186b): 13,312, every layer on the GPUs (benchmarks/multigpu_answers.py)
    assert (plan.max_context, plan.max_context_basis) == (13_312, "all_on_gpu")


@pytest.mark.parametrize("alias, gpu, ctx", [("mixtral-8x7b", "2xrtx-3060", None),
                                             ("qwen3.6-35b-a3b", "2xrtx-3060", "65536")])
def test_the_plan_is_the_same_with_the_bound_as_without(monkeypatch, alias, gpu, ctx):
    """The search plans the same contexts and answers the same (its --explain step included), the bound only
    sparing whole plans: mixtral's all-on-GPU search skipped whole (every probe past the bound), and qwen3.6-35b-a3b's
    (12 probes from 262,144 down to 5,376, all on the GPUs) spared the plans at its longer contexts."""
    from runlocal import search

    real, fired = search.every_layer_surely_moved, []
    monkeypatch.setattr("runlocal.search.every_layer_surely_moved", lambda *a, **k: fired.append(real(*a, **k)) or fired[-1])
    with_bound = _check(alias, gpu, "64GiB", ctx).to_dict()
    assert any(fired) and not all(fired) if ctx else all(fired), fired     # the probes the bound spared
    monkeypatch.setattr("runlocal.search.every_layer_surely_moved", lambda *a, **k: False)
    from runlocal.runtimes import llamacpp

    for memo in (llamacpp._ALLOCATIONS, llamacpp._FITS, llamacpp._BUFFERS):     # plans made afresh, not recalled
        memo.clear()
    without = _check(alias, gpu, "64GiB", ctx).to_dict()
    assert with_bound == without


def test_the_every_layer_probe_skipped_by_fit_is_over_when_simulated():
    """llamacpp fit() over several GPUs with -c given leaves out its first probe (every layer at the default split)
    where every_layer_surely_moved says so: that probe, simulated here, has some GPU past its capacity less --fit's
    margin, so fit() goes on to its fill either way. By hand: 2 x 11.75 GiB less 1 GiB each is 21.5 GiB, under the
    70B's ~39.6 GiB of Q4_K_M weights alone."""
    from runlocal.runtimes.llamacpp import FIT_MARGIN
    from runlocal.runtimes.llamacpp_fit_bound import every_layer_surely_moved

    model = lookup("llama-3.1-70b")
    targets = choose.device_targets(find_device("rtx-3060-12gb"), 2)
    settings, _ = with_default_quant(model, choose._settings("llama.cpp", 8192, None, 2, 1, model))
    rt = get_runtime("llama.cpp")
    weights = quick_plan(model, settings, targets, runtime=rt).weights
    assert every_layer_surely_moved(rt, model, weights, settings, targets)
    use = rt._gpu_use(model, weights, settings.with_(n_gpu_layers=model.n_layers + 1), targets)
    gpus = [t for t in targets if t.kind != "cpu"]
    assert len(use) == len(gpus) == 2
    assert any(u > t.capacity - FIT_MARGIN for u, t in zip(use, gpus))
    assert sum(use) > 21 * GiB
