"""One request contract (runlocal/request.py): the library, the CLI and the HTTP API refuse the same values,
name the same field, and accept the same sizes and token counts."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runlocal.check import CheckRequest, build_settings
from runlocal.errors import InputError
from runlocal.request import options

# (library field, API value, CLI flags): each value is out of the contract's bounds
BAD = [
    ("ctx", -1, ["--ctx", "-1"]),     # (0 is llama-server's -c 0, the trained context: tests/unit/test_context_zero.py)
    ("ctx", 1 << 32, ["--ctx", str(1 << 32)]),
    ("n_gpu_layers", -3, ["--ngl", "-3"]),
    ("parallel", 5000, ["--parallel", "5000"]),
    ("tp", 0, ["--tp", "0"]),
    ("pp", 2000, ["--pp", "2000"]),
    ("gpu_memory_utilization", 1.5, ["--gpu-memory-utilization", "1.5"]),
    ("mem_fraction_static", 0.0, ["--mem-fraction-static", "0"]),
    ("batch", 0, ["--batch", "0"]),
    ("flash_attn", "maybe", ["--flash-attn", "maybe"]),
    ("fit", "sometimes", ["--fit", "sometimes"]),
    ("runtime", "tensorrt", ["--runtime", "tensorrt"]),
    ("attn_implementation", "flash", ["--attn-implementation", "flash"]),
    ("vram", "lots", ["--vram", "lots"]),
    ("kv_cache", "fp8", ["--kv-cache", "fp8"]),          # llama.cpp has no fp8 cache (was a KeyError)
]


def _flag_name(field: str) -> str:
    return options()[field].name


@pytest.mark.parametrize("field, value, flags", BAD)
def test_library_cli_and_api_refuse_the_same_values(field, value, flags, tmp_path):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app
    from runlocal.cli import app as cli

    with pytest.raises(InputError, match=rf"^{_flag_name(field)}: "):
        build_settings(CheckRequest(model="llama-3.1-8b", **{field: value}))
    r = CliRunner().invoke(cli, ["check", "llama-3.1-8b", "--gpu", "rtx-4090", *flags])
    assert r.exit_code == 2
    assert f"error: {_flag_name(field)}: " in r.output and "Traceback" not in r.output
    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}"))
    for answer in (client.post("/api/v1/check", json={"model": "llama-3.1-8b", field: value}),
                   client.get("/api/v1/check", params={"model": "llama-3.1-8b", field: value})):
        assert answer.status_code == 422, answer.text
        assert answer.json()["detail"][0]["loc"][1] == field


@pytest.mark.parametrize("value", [True, False])
def test_a_json_boolean_for_a_word_choice_is_refused_in_one_line(value, tmp_path):
    # flash_attn=True from the Python API (a posted outcome's "-fa 1" written as JSON true) once passed validation and
    # crashed in llama-server's command with a TypeError; the choices are the words llama.cpp's --flash-attn takes
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    word = "true" if value else "false"
    with pytest.raises(InputError, match=rf"^flash-attn: expected on \| off \| auto, got {word}$"):
        build_settings(CheckRequest(model="llama-3.1-8b", flash_attn=value))
    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}"))
    answer = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "flash_attn": value})
    assert answer.status_code == 422, answer.text


def test_the_api_model_has_exactly_the_contracts_fields():
    from runlocal.api.schemas import CheckBody

    assert list(CheckBody.model_fields) == list(options())


def test_every_flag_of_the_contract_is_a_cli_option():
    from runlocal.cli import app as cli

    help_text = CliRunner().invoke(cli, ["check", "--help"], env={"COLUMNS": "300"}).output
    for name, opt in options().items():
        if name != "model":
            assert opt.flags[0] in help_text


def test_sizes_and_contexts_as_people_type_them():
    s = build_settings(CheckRequest(model="x", ctx="32k", vram="24G"))
    assert s.ctx == 32768


def test_gpu_layers_as_llama_cpp_spells_them_from_the_library():
    """-ngl all / auto / a count, given to the Python API as the CLI takes them (was a TypeError deep in the planner)."""
    assert build_settings(CheckRequest(model="x", n_gpu_layers="all")).llamacpp.n_gpu_layers == -2
    assert build_settings(CheckRequest(model="x", n_gpu_layers="auto")).llamacpp.n_gpu_layers == -1
    assert build_settings(CheckRequest(model="x", n_gpu_layers="20")).llamacpp.n_gpu_layers == 20
    with pytest.raises(InputError, match=r"^ngl: expected a layer count, auto or all, got 'most'"):
        build_settings(CheckRequest(model="x", n_gpu_layers="most"))


def test_choices_follow_their_sources():
    from runlocal.kv import CACHE_TYPES
    from runlocal.runtimes.ollama import LLAMA_CACHE_TYPES
    from runlocal.runtimes.transformers import ATTN_IMPLEMENTATIONS

    assert options()["attn_implementation"].choices == ATTN_IMPLEMENTATIONS
    from runlocal.runtimes import ENGINES, engine

    assert set(engine("llama.cpp").cache_types or ()) == set(LLAMA_CACHE_TYPES)
    assert all(set(e.cache_types) <= set(CACHE_TYPES) for e in ENGINES if e.cache_types)


def test_valid_cache_types_still_plan():
    # the engines' own types pass the per-engine check; vLLM's fp8 and llama.cpp's q8_0 are each one's own
    assert build_settings(CheckRequest(model="x", runtime="vllm", kv_cache="fp8")).cache_type_k == "fp8"
    assert build_settings(CheckRequest(model="x", kv_cache="q8_0")).cache_type_v == "q8_0"
    with pytest.raises(InputError, match="^kv-cache: vllm has no 'q4_0'"):
        build_settings(CheckRequest(model="x", runtime="vllm", kv_cache="q4_0"))
