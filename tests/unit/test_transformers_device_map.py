"""`model.cuda()` / `from_pretrained(device_map="cuda")`: every module on the first GPU, nothing spilled to RAM
(README: "Not modelled yet: model.cuda() without device_map" — now `--device-map cuda`)."""

from __future__ import annotations

from runlocal.check import CheckRequest, check


def _plan(model, **kw):
    kw = {"runtime": "transformers", "gpu": "rtx-4090", **kw}
    return check(CheckRequest(model=model, ctx=4096, use_measurements=False, **kw))[0]


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
    # check_and_set_device_map reads any other string as a device name (transformers 5.23.0 integrations/accelerate.py
    # :115); runlocal plans "cuda" of those and refuses the rest, naming the field
    with pytest.raises(InputError, match="device.map"):
        _plan("llama-3.1-8b", device_map="balanced_low_1")


def test_the_request_offers_the_device_maps_the_planner_reads():
    from runlocal.request import options
    from runlocal.runtimes.transformers_device_map import DEVICE_MAPS

    assert tuple(options()["device_map"].choices) == DEVICE_MAPS


def _on(plan):
    return [d.weights for d in plan.allocation.devices if d.kind == "gpu"]


def _max_memory(plan):
    return next(s for s in plan.allocation.steps if s.label.startswith("max_memory"))


def test_balanced_is_auto():
    # _get_device_map: every string but "sequential" runs get_balanced_memory, low_zero only for "balanced_low_0"
    # (5.23.0 integrations/accelerate.py:353-359; 4.35.2 modeling_utils.py:3395-3399): the same placement
    for gpu in ("h100", "2xh100"):
        auto, balanced = _plan("llama-3.1-8b", device_map="auto", gpu=gpu), _plan("llama-3.1-8b", device_map="balanced",
                                                                                  gpu=gpu)
        assert auto.allocation.devices == balanced.allocation.devices
        assert 'device_map="balanced"' in balanced.command


def test_balanced_low_0_leaves_gpu_0_what_the_others_cannot_hold():
    # two H100s, Llama-3.1-8B in bf16 (16.06 GB): low_zero sets GPU 0 to max(0, model − GPU 1's free memory) and GPU 1,
    # the last, keeps all its free memory (get_balanced_memory :331-335); 16 GB < GPU 1's ~78 GiB → GPU 0 gets 0 bytes
    # and every weight sits on GPU 1. "auto" caps GPU 0 at about half (16.06 GB / 2 + 1.25 × one decoder layer) instead
    low, auto = _plan("llama-3.1-8b", device_map="balanced_low_0", gpu="2xh100"), _plan("llama-3.1-8b", gpu="2xh100")
    assert _on(low)[0] == 0 and _on(low)[1] == sum(_on(auto))
    assert 0 < _on(auto)[0] < sum(_on(auto)) and "0: 0.00 GiB" in _max_memory(low).value
    assert 'device_map="balanced_low_0"' in low.command
    # one GPU: "We cannot do low_zero on just one GPU" (:286-287) — the same as auto
    assert _plan("llama-3.1-8b", device_map="balanced_low_0").allocation.devices == _plan("llama-3.1-8b").allocation.devices


def test_sequential_fills_gpu_0_first_at_its_whole_free_memory():
    # "sequential" skips get_balanced_memory (:362): no per-GPU cap, so the 16 GB model stays on GPU 0 of two H100s
    seq = _plan("llama-3.1-8b", device_map="sequential", gpu="2xh100")
    assert _on(seq)[1] == 0 and _on(seq)[0] == sum(_on(_plan("llama-3.1-8b", gpu="2xh100")))
    # and on one GPU no 90 % share (get_balanced_memory's :292): GPU 0's max_memory is auto's / 0.9
    one_seq, one_auto = _plan("llama-3.1-8b", device_map="sequential", gpu="h100"), _plan("llama-3.1-8b", gpu="h100")
    seq_gib = float(_max_memory(one_seq).value.split("0: ")[1].split(" GiB")[0])
    auto_gib = float(_max_memory(one_auto).value.split("0: ")[1].split(" GiB")[0])
    assert abs(seq_gib * 0.9 - auto_gib) < 0.01


def test_balanced_low_0_with_accelerate_before_0_21_is_refused():
    # accelerate 0.20.3 utils/modeling.py:588 divides by num_devices − 1 = 0 on one GPU and :632 caps GPU 0 at 0;
    # both fixed in 0.21.0 (accelerate #1617, #1634). transformers 4.35.2 calls the installed accelerate's
    import pytest

    from runlocal.errors import InputError
    with pytest.raises(InputError, match="device-map: balanced_low_0 with accelerate 0.20.3.*#1617"):
        _plan("llama-3.1-8b", device_map="balanced_low_0", runtime="transformers==4.35.2", accelerate="0.20.3")
    ok = _plan("llama-3.1-8b", device_map="balanced_low_0", runtime="transformers==4.35.2", accelerate="0.21.0")
    assert ok.verdict
