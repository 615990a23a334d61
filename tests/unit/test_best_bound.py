"""`runlocal best` skips the configurations whose GPUs cannot hold the weights (choose._may_run_whole): every one it
skips, planned anyway, must not run whole — so the ranking is the one planning every configuration gives."""

from __future__ import annotations

import pytest

from runlocal import choose
from runlocal.hardware.catalog import load_devices
from runlocal.model.catalog import lookup


@pytest.mark.slow
@pytest.mark.parametrize("alias,runtime", [("llama-3.1-70b", "llama.cpp"), ("llama-3.1-70b", "vllm"),
                                           ("llama-3.1-70b", "transformers"), ("llama-3.1-70b", "mlx"),
                                           ("qwen3-235b-a22b", "sglang")])
def test_no_configuration_best_skips_would_have_run(alias, runtime):
    model = lookup(alias)
    ctx = choose.DEFAULT_CTX
    quants = choose.quant_ladder(runtime, None, model)
    host_cache: dict = {}
    skipped = kept = 0
    for dev in load_devices():
        if not choose.runtime_runs_on(runtime, dev):
            continue
        for count in (choose.MULTI_COUNTS if dev.kind == "gpu" else (1,)):
            targets = choose.device_targets(dev, count)
            may = choose._may_run_whole(model, targets, runtime, ctx, quants, host_cache)
            kept += len(may)
            for q in quants:
                if q in may:
                    continue
                skipped += 1
                fit = choose.plan_fit(model, targets, runtime=runtime, ctx=ctx, quant=q, host_cache=host_cache)
                assert not fit.runs, (dev.id, count, q)
    assert skipped and kept          # the bound is exercised both ways on this catalog


def test_a_70b_is_ranked_on_the_same_devices_with_the_bound_as_without(monkeypatch):
    model = lookup("llama-3.1-70b")
    with_bound = choose.best(model).to_dict()
    monkeypatch.setattr(choose, "_may_run_whole", lambda model, targets, runtime, ctx, quants, cache: quants)
    assert choose.best(model).to_dict() == with_bound
