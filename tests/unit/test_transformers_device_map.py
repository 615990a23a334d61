"""`model.cuda()` / `from_pretrained(device_map="cuda")`: every module on the first GPU, nothing spilled to RAM
(README: "Not modelled yet: model.cuda() without device_map" — now `--device-map cuda`)."""

from __future__ import annotations

from runlocal.check import CheckRequest, check


def _plan(model, **kw):
    return check(CheckRequest(model=model, runtime="transformers", gpu="rtx-4090", ctx=4096, use_measurements=False,
                              **kw))[0]


def _weights(plan, kind):
    return sum(d.weights for d in plan.allocation.devices if d.kind == kind)


def test_device_map_cuda_puts_every_weight_on_the_gpu_where_auto_spills():
    # Qwen2.5-14B in bf16 is 27.5 GiB of weights, more than a 24 GB card: accelerate's "auto" spills layers to RAM
    # and runs (tight); "cuda" loads them all onto the GPU, which runs out of memory while loading
    auto, cuda = _plan("qwen2.5-14b"), _plan("qwen2.5-14b", device_map="cuda")
    assert _weights(auto, "cpu") > 0 and auto.verdict != "does_not_fit"
    assert _weights(cuda, "cpu") == 0 and cuda.verdict == "does_not_fit"
    assert _weights(cuda, "gpu") == _weights(auto, "gpu") + _weights(auto, "cpu")   # the same weights, one place
    assert 'device_map="cuda"' in cuda.command and 'device_map="auto"' in auto.command


def test_a_model_the_card_holds_runs_either_way():
    plan = _plan("llama-3.1-8b", device_map="cuda")         # 15 GiB of bf16 weights on 24 GB
    assert plan.verdict != "does_not_fit" and _weights(plan, "cpu") == 0


def test_device_map_takes_only_what_transformers_takes():
    import pytest

    from runlocal.errors import InputError
    with pytest.raises(InputError, match="device.map"):
        _plan("llama-3.1-8b", device_map="balanced")
