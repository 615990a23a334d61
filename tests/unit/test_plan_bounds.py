"""The bounds the searches skip plans with are bounds: a plan skipped because its bytes without compute buffers
already overflow a device (surely_over) is one that would not have fit, and those bytes never exceed the plan's.

Checked on real plans: catalog models from a 1B to a 1T MoE, Ollama with num_gpu set (the fixes try every layer on
the GPU) and llama.cpp with -ngl set, on a 12 GB and a 24 GB card, one and two GPUs.
"""

from __future__ import annotations

import pytest

from runlocal.check import _inputs
from runlocal.request import CheckRequest
from runlocal.runtimes.llamacpp import LlamaCpp
from runlocal.runtimes.llamacpp_swa import as_llamacpp_loads
from runlocal.runtimes.ollama import Ollama
from runlocal.verdict import fits
from runlocal.weights import estimate, with_default_quant

MODELS = ("gemma-3-1b", "llama-3.1-8b", "gpt-oss-20b", "qwen3-30b-a3b", "gemma-3-27b", "llama-3.1-70b")


def _setup(alias: str, gpu: str):
    spec, settings, targets, _ = _inputs(CheckRequest(model=alias, runtime="ollama", gpu=gpu, ram="64G"))
    settings, _ = with_default_quant(spec, settings)
    return spec, settings.with_(ctx=4096), targets, estimate(spec, settings.quant)


@pytest.mark.parametrize("gpu", ["rtx-3060", "2x rtx-4090"])
@pytest.mark.parametrize("alias", MODELS)
def test_ollama_with_num_gpu_skips_only_plans_that_do_not_fit(alias, gpu):
    spec, settings, targets, weights = _setup(alias, gpu)
    ollama = Ollama()
    n = spec.n_layers
    skipped = 0
    for ngl in sorted({0, 1, n // 3, n // 2, n - 1, n + 1}):
        s = settings.with_(n_gpu_layers=ngl)
        plan = ollama.allocate(spec, weights, s, targets)
        floor = ollama._llama.floor(as_llamacpp_loads(spec), weights, ollama._llama_settings(
            s, plan_batch(plan), ngl, 0, s.llamacpp.flash_attn), targets)
        # GPUs in order, then the host: each floor at most the plan's bytes there
        for f, d in zip(floor, plan.devices):
            assert f <= d.total, (alias, gpu, ngl, d.name, f, d.total)
        if ollama.surely_over(spec, weights, s, targets):
            skipped += 1
            assert not fits(plan), (alias, gpu, ngl)
    if alias == "llama-3.1-70b" and gpu == "rtx-3060":
        assert skipped, "a 70B with every layer on one 12 GB card is skipped without a plan"


def plan_batch(plan) -> int:
    """The -b Ollama launched llama-server with (its assumption line)."""
    line = next(a for a in plan.assumptions if "llama-server launched with" in a)
    return int(line.split(" -b ")[1].split()[0])


# --- Ollama with --fit placing the layers: the host's bytes along fit_layers' order, and the launches skipped ---

FIT_CASES = [("qwen3-30b-a3b", "rtx-3060", ctx, ram) for ctx in (4096, 32768) for ram in ("6G", "9G", "12G")] + \
            [("llama-3.1-70b", "rtx-3060", ctx, ram) for ctx in (4096, 16384) for ram in ("28G", "34G", "40G")] + \
            [("gpt-oss-20b", "rtx-3060", 65536, ram) for ram in ("2G", "4G", "8G")]


def _fit_setup(alias: str, gpu: str, ctx: int, ram: str):
    spec, settings, targets, _ = _inputs(CheckRequest(model=alias, runtime="ollama", gpu=gpu, ram=ram))
    settings, _ = with_default_quant(spec, settings)
    return as_llamacpp_loads(spec), settings.with_(ctx=ctx), targets, estimate(spec, settings.quant)


@pytest.mark.parametrize("alias,ctx", [("qwen3-30b-a3b", 32768), ("llama-3.1-70b", 4096), ("gpt-oss-20b", 65536)])
def test_each_step_of_the_fit_order_moves_bytes_from_the_gpu_to_the_host(alias, ctx):
    """What Ollama.surely_over relies on: along FitProbes.order() (every placement --fit can answer, most on the GPU
    first) the GPU's bytes without compute buffers never grow and the host's never shrink."""
    from runlocal.runtimes.llamacpp import FitProbes

    spec, settings, targets, weights = _fit_setup(alias, "rtx-3060", ctx, "64G")
    ollama = Ollama()
    s, flash, batch, _, _, _ = ollama._launch(spec, weights, settings, targets)
    order = FitProbes(spec, None, None).order()
    assert order[0] == (spec.n_layers + 1, 0) and order[-1][0] == 0 and len(set(order)) == len(order)
    floors = [ollama._llama.floor(spec, weights, ollama._llama_settings(s, batch, g, m, flash), targets)
              for g, m in order]
    for (p, q), a, b in zip(zip(order, order[1:]), floors, floors[1:]):
        assert b[0] <= a[0] and b[-1] >= a[-1], (alias, p, q, a, b)


@pytest.mark.parametrize("alias,gpu,ctx,ram", FIT_CASES)
def test_ollama_fit_skips_only_launches_whose_plan_leaves_the_host_over(alias, gpu, ctx, ram):
    """A launch surely_over skips while --fit is still searching would not fit: planned again from nothing (no
    answers kept from the search that was cut short), its host holds more than the RAM; and the plan made after
    surely_over asked is the plain one."""
    from runlocal.runtimes import llamacpp

    spec, settings, targets, weights = _fit_setup(alias, gpu, ctx, ram)
    llamacpp._LAYER_OUTCOMES.clear()
    over = Ollama().surely_over(spec, weights, settings, targets)
    after = Ollama().allocate(spec, weights, settings, targets)
    llamacpp._LAYER_OUTCOMES.clear()
    plain = Ollama().allocate(spec, weights, settings, targets)
    assert after == plain
    if over:
        assert not fits(plain) and plain.refusal and "system memory" in plain.refusal, (alias, ctx, ram)
    if (alias, ctx, ram) in (("llama-3.1-70b", 16384, "34G"), ("qwen3-30b-a3b", 32768, "9G")):
        # 40 / 12 GiB would hold it: the sum of the floors does not rule it out, --fit's first probes do
        assert over


class _NoFloor(LlamaCpp):
    """llama.cpp planned without its lower bound (each device's floor 0): every use --fit asks for is planned."""

    def floor(self, model, weights, settings, targets):
        return [0] * (len(targets) + 1)


@pytest.mark.parametrize("alias,gpu", [("qwen3-30b-a3b", "rtx-3060"), ("llama-3.1-70b", "rtx-4090"),
                                       ("gemma-3-27b", "rtx-3060"), ("llama-3.1-8b", "rtx-3060")])
def test_llamacpp_fit_skips_only_uses_that_cannot_keep_the_margin(alias, gpu):
    """`runlocal check MODEL --gpu GPU` (-c 0, --fit on one GPU): where the trained or the minimum context with every
    layer is past the margin without compute buffers, --fit's context step plans neither; the launch it chooses
    (context, layers, the steps that say why) is the one planned with every use made."""
    from runlocal.runtimes import llamacpp

    spec, settings, targets, _ = _inputs(CheckRequest(model=alias, runtime="llama.cpp", gpu=gpu, ram="64G"))
    settings, _ = with_default_quant(spec, settings)
    spec, weights = as_llamacpp_loads(spec), estimate(spec, settings.quant)
    made = []
    for planner in (LlamaCpp(), _NoFloor()):
        for memo in (llamacpp._LAYER_OUTCOMES, llamacpp._FITS, llamacpp._ALLOCATIONS, llamacpp._BUFFERS,
                     llamacpp._FLOORS):
            memo.clear()
        made.append(planner.fit(spec, weights, settings, targets))
    assert made[0] == made[1]


@pytest.mark.parametrize("alias,ctx,ram", [("qwen3-30b-a3b", 32768, ram) for ram in ("6G", "9G", "12G")]
                         + [("llama-3.1-70b", 16384, ram) for ram in ("28G", "34G", "40G")])
def test_llamacpp_fit_skips_only_launches_whose_plan_leaves_the_host_over(alias, ctx, ram):
    """llama-server -c N with --fit placing the layers (the fix "ask for the longest context"): a launch surely_over
    skips while --fit searches holds more than the RAM on the host in its plain plan (caches cleared), and the plan
    made after surely_over asked is the plain one."""
    from runlocal.runtimes import llamacpp

    spec, settings, targets, _ = _inputs(CheckRequest(model=alias, runtime="llama.cpp", gpu="rtx-3060", ram=ram))
    settings, _ = with_default_quant(spec, settings)
    settings, weights = settings.with_(ctx=ctx), estimate(spec, settings.quant)
    memos = (llamacpp._LAYER_OUTCOMES, llamacpp._FITS, llamacpp._ALLOCATIONS, llamacpp._BUFFERS)
    for memo in memos:
        memo.clear()
    over = LlamaCpp().surely_over(spec, weights, settings, targets)
    after = LlamaCpp().allocate(spec, weights, settings, targets)
    for memo in memos:
        memo.clear()
    plain = LlamaCpp().allocate(spec, weights, settings, targets)
    assert after == plain
    if over:
        host = next(d for d in plain.devices if d.kind == "cpu")
        assert not fits(plain) and host.total > host.capacity, (alias, ctx, ram)
    if (alias, ram) in (("llama-3.1-70b", "34G"), ("qwen3-30b-a3b", "9G")):
        assert over


# --- Ollama v0.7.1 – v0.11.4 on several GPUs: the estimator's -ngl / --tensor-split, not --fit, holds the layers ---

@pytest.mark.parametrize("alias,gpu,ram", [("llama-3.1-70b", "2x rtx-3060", "32G"), ("llama-3.1-70b", "2x rtx-3090", "16G"),
                                           ("qwen2.5-32b", "2x rtx-3060", "8G")])
def test_estimator_bound_skips_only_plans_that_do_not_fit(alias, gpu, ram):
    """review19b finding 5: surely_over / room_when_over took llama-server --fit's bound where the estimator placed
    the layers. The bound is now each device's floor at the estimator's placement (held_floor): a plan it skips must
    not fit when planned, and its room guess is keyed by the plan's own devices."""
    from runlocal.runtimes import get_runtime

    spec, settings, targets, _ = _inputs(CheckRequest(model=alias, runtime="ollama==0.9.0", gpu=gpu, ram=ram))
    settings, _ = with_default_quant(spec, settings)
    weights = estimate(spec, settings.quant)
    ollama = get_runtime("ollama==0.9.0")
    skipped = 0
    for ctx in (4096, 16384, 32768, 65536, 131072):
        s = settings.with_(ctx=ctx)
        plan = ollama.allocate(spec, weights, s, targets)
        assert any("EstimateGPULayers" in st.formula for st in plan.steps), (alias, ctx)
        if ollama.surely_over(spec, weights, s, targets):
            skipped += 1
            assert not fits(plan), (alias, gpu, ram, ctx)
            room = ollama.room_when_over(spec, weights, s, targets)
            assert room and min(room.values()) < 0, (alias, ctx, room)
    if (alias, ram) == ("llama-3.1-70b", "16G"):
        assert skipped, "a 70B whose estimator leaves 20+ GiB on a 16 GiB host is skipped at long contexts"
