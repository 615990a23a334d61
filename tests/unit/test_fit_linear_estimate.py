"""llama-server --fit's context on one GPU is a linear estimate, not measured again (review23 #16).

common/fit.cpp common_params_fit_impl, step 2 (read in a stored copy of llama.cpp's common/fit.cpp): with the context
unset and the margin missed at the trained context, it measures the use at the minimum context, sets
  n_ctx = n_ctx_min + (n_ctx_max − n_ctx_min) × (target − used_min) / (used_max − used_min),
rounds it down to 256 × streams, and with one device returns at once ("entire model can be fit by reducing
context"). Where the use grows faster than linearly past that point the launch keeps less than the 1 GiB margin
(common/common.h fit_params_target) — gemma-3-27b on an RTX 4090: 0.89 GiB — while -c given by the user is measured
("context size set by user … no change", then the layer steps) and moves a layer. The plan says so, and the three
contexts of that screen are each fit.cpp's."""

from __future__ import annotations

from runlocal.check import check
from runlocal.hardware.targets import targets_from_options
from runlocal.request import CheckRequest

GiB = 2**30
MARGIN = 1024 * 2**20          # fit_params_target


def test_gemma3_27b_on_a_4090_gets_fits_linear_estimate_and_says_what_it_leaves():
    # --no-mmproj: fit.cpp's own launch (llama-server loads an -hf repo's projector after --fit chose, which fit.cpp
    # does not count — runtimes/llamacpp_mmproj.py; the last lines below check it lands on top)
    plan, _ = check(CheckRequest(model="gemma-3-27b", gpu="rtx-4090", no_mmproj=True))
    targets, _ = targets_from_options("rtx-4090", None, None)
    gpu = next(t for t in targets if t.kind != "cpu")
    every_layer = plan.settings.with_(n_gpu_layers=plan.model.n_layers + 1)

    def used(ctx: int) -> int:          # fit.cpp's measurement of one launch: the GPU's buffers and context
        return sum(plan.planner._gpu_use(plan.model, plan.weights, every_layer.with_(ctx=ctx), targets))

    # fit.cpp's interpolation, by hand (one stream: -np auto's unified cache; trained 131,072, minimum 4,096)
    lo, hi = 4096, 131072
    target = gpu.capacity - MARGIN
    n_ctx = lo + (hi - lo) * (target - used(lo)) // (used(hi) - used(lo))
    n_ctx -= n_ctx % 256
    assert plan.settings.ctx == n_ctx == 61952
    assert plan.settings.llamacpp.n_gpu_layers == plan.model.n_layers + 1      # every layer kept
    # the use at that context is past the target: the margin is not kept, and the plan says by how much
    (dev,) = [d for d in plan.allocation.devices if d.kind != "cpu"]
    assert dev.total == used(n_ctx) > target
    left = (gpu.capacity - dev.total) / GiB
    assert round(left, 2) == 0.89                       # 23.64 − 22.75, the memory table's free column
    assert plan.allocation.compromise.endswith(
        f"a linear estimate between two measured uses, not measured again on one GPU: {left:.2f} GiB is left on "
        f"{dev.name}")
    # the largest -c that keeps every layer is below it, and -c 61952 asked is measured, so fit.cpp moves a layer
    assert plan.max_context < n_ctx
    asked, _ = check(CheckRequest(model="gemma-3-27b", gpu="rtx-4090", ctx=n_ctx, no_mmproj=True))
    assert asked.settings.llamacpp.n_gpu_layers == plan.model.n_layers
    # with the projector (the default -hf launch) --fit chooses the same context and the projector comes on top
    with_projector, _ = check(CheckRequest(model="gemma-3-27b", gpu="rtx-4090"))
    (dev_p,) = [d for d in with_projector.allocation.devices if d.kind != "cpu"]
    assert with_projector.settings.ctx == n_ctx and dev_p.total > dev.total


def test_an_estimate_that_keeps_the_margin_adds_nothing():
    # llama-3.1-8b on an RTX 3060 12GB: --fit's 46,848 leaves 1.00 GiB (the table's free column), the margin kept
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-3060-12gb"))
    (dev,) = [d for d in plan.allocation.devices if d.kind != "cpu"]
    assert dev.capacity - dev.total >= MARGIN and "context shortened" in plan.allocation.compromise
    assert "linear estimate" not in plan.allocation.compromise
