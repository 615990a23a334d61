"""The engine registry (runtimes/registry.py) and the per-engine options in Settings (runtimes/options.py): every
name a user types reaches the same planner and the same answer, and each engine's flags land in its own options."""

from __future__ import annotations

from dataclasses import fields

import pytest
from asking import ask

from runlocal.check import CheckRequest, build_settings, check
from runlocal.choose import runtime_runs_on
from runlocal.errors import InputError
from runlocal.hardware.catalog import load_devices
from runlocal.runtimes import ENGINES, Settings, engine, get_runtime, runtime_aliases
from runlocal.runtimes.options import OPTION_ATTRS, SGLangOptions


def test_every_alias_reaches_its_engines_planner():
    for name in runtime_aliases():
        entry = engine(name)
        assert get_runtime(name).name == entry.name == engine(name.upper()).name
        assert get_runtime(name).pools_kv == (entry.name in ("vllm", "sglang"))


def test_an_unknown_runtime_is_one_line_naming_the_field():
    with pytest.raises(InputError, match=r"^runtime: unknown runtime 'tgi'"):
        engine("tgi")


def test_option_names_are_unique_so_with_knows_where_a_change_goes():
    common = {f.name for f in fields(Settings)}
    seen: set[str] = set()
    for attr, cls in OPTION_ATTRS.items():
        names = {f.name for f in fields(cls)}
        assert not names & seen and not names & common, attr
        seen |= names
    s = Settings(runtime="sglang").with_(mem_fraction_static=0.8, ctx=4096, n_gpu_layers=3)
    assert (s.sglang.mem_fraction_static, s.ctx, s.llamacpp.n_gpu_layers) == (0.8, 4096, 3)
    assert s.option("mem_fraction_static") == 0.8
    with pytest.raises(TypeError):
        Settings().with_(no_such_setting=1)


def test_every_engine_has_its_options_object():
    assert {e.options for e in ENGINES} == set(OPTION_ATTRS)
    assert {e.name for e in ENGINES if e.options == "llamacpp"} == {"llama.cpp", "ollama"}
    for e in ENGINES:
        assert isinstance(getattr(Settings(runtime=e.name), e.options), e.options_type)


def test_sglang_gets_the_requests_flags_under_its_own_names():
    # `runlocal check … --runtime sglang --max-num-batched-tokens 4096 --enforce-eager`: SGLang's
    # --chunked-prefill-size 4096 and --disable-cuda-graph
    s = build_settings(CheckRequest(model="llama-3.1-8b", runtime="sglang", max_num_batched_tokens=4096,
                                    enforce_eager=True, mem_fraction_static=0.8))
    assert s.sglang == SGLangOptions(mem_fraction_static=0.8, chunked_prefill_size=4096, disable_cuda_graph=True)
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="h100", runtime="sglang", max_num_batched_tokens=4096,
                                 use_measurements=False))
    assert plan.settings.sglang.chunked_prefill_size == 4096


def test_a_runtime_spelled_in_capitals_gets_the_same_speed():
    # the speed model picked vLLM's constants by comparing the typed name with "vllm": `--runtime VLLM` got the
    # ggml CUDA constants (33.5 tok/s for this plan instead of 103)
    lower, _ = ask("runlocal check llama-3.1-8b --gpu h100 --runtime vllm")
    upper, _ = ask("runlocal check llama-3.1-8b --gpu h100 --runtime VLLM")
    assert upper.runtime == "vllm" and upper.settings.runtime == "vllm"
    assert upper.speed == lower.speed and upper.to_dict() == lower.to_dict()


@pytest.mark.parametrize("runtime, runs_on", [
    ("mlx", lambda d: d.kind == "apple"),                                             # Apple silicon only
    ("vllm", lambda d: d.kind in ("gpu", "unified") and bool({"cuda", "rocm"} & set(d.backends))),
    ("sglang", lambda d: d.kind in ("gpu", "unified") and bool({"cuda", "rocm"} & set(d.backends))),
    ("transformers", lambda d: d.kind in ("apple", "cpu") or bool({"cuda", "rocm"} & set(d.backends))),
    ("llama.cpp", lambda d: True), ("ollama", lambda d: True),
])
def test_which_devices_each_engine_runs_on(runtime, runs_on):
    devices = load_devices()
    assert [d.id for d in devices if runtime_runs_on(runtime, d)] == [d.id for d in devices if runs_on(d)]
