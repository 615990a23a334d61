"""The context search's "fits" is the verdict's own rule (review22b finding 13): a llama.cpp plan whose -ngl holds
layers in RAM is tight whatever its context (verdict.weights_in_ram; src/llama-model.cpp load_tensors keeps the
blocks past -ngl, and the output layer below n_layer + 1, on the CPU), so no context reaches "fits" for it."""

from __future__ import annotations

from runlocal.hardware.targets import targets_from_options
from runlocal.model.catalog import lookup
from runlocal.plan import estimate
from runlocal.runtimes import Settings, get_runtime
from runlocal.search import fits_verdict, longest_context
from runlocal.verdict import verdict


def test_layers_pinned_in_ram_reach_no_fits_context():
    model = lookup("llama-3.1-8b")
    targets, _ = targets_from_options("rtx-4090", None, "64G")
    weights = estimate(model, "Q4_K_M")
    rt = get_runtime("llama.cpp")
    # -ngl 20: 12 of Llama-3.1-8B's 32 blocks and the output layer stay in RAM; the GPU holds about 20/32 of 4.6 GiB
    # of weights, far under 90 % of 24 GiB at 4,096 tokens — "fits" by memory alone, tight by the placement rule
    pinned = Settings(runtime="llama.cpp", ctx=4096, quant="Q4_K_M").with_(n_gpu_layers=20)
    a = rt.allocate(model, weights, pinned, targets)
    assert verdict(a) == "fits" and verdict(a, model) == "tight"
    assert fits_verdict(a) and not fits_verdict(a, model)
    # the search (as the context fix runs it) judges by the whole rule: no context fits with those layers in RAM
    assert longest_context(rt, model, weights, pinned, targets, hi=8192, ok=fits_verdict) is None
    # every layer on the GPU (-ngl 33 = 32 blocks + output), the same search finds the top of the range
    whole = pinned.with_(n_gpu_layers=33)
    assert longest_context(rt, model, weights, whole, targets, hi=8192, ok=fits_verdict) == 8192
