"""Releases outside what was read (review20 finding 7): one above the newest read is planned with the newest's rules
and the plan says so in one note, the same words for every runtime; vLLM below its oldest read parser (v0.1.0) is
refused as SGLang and mlx-lm below theirs are. The newest releases are those the sources name: vLLM 0.33.0 (the wheels
runtimes/vllm_cpu.py read, "0.31.0–0.33.0"), llama.cpp b11312 (0c1e57098, the build runtimes/ggml traces), Ollama
0.32.15 (the newest tag in data/ollama_llama_cpp.json, LLAMA_CPP_VERSION b10488), SGLang 0.5.23
(measurements/sglang_versions/wheels.txt's last wheel)."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.errors import InputError
from runlocal.request import CheckRequest


def notes(runtime: str, gpu: str = "rtx-3090") -> list[str]:
    return check(CheckRequest(model="llama-3.1-8b", gpu=gpu, runtime=runtime, ctx=4096, use_measurements=False))[1]


@pytest.mark.parametrize("runtime, said", [
    ("vllm==9.9", "vLLM 9.9 is newer than the newest release read (0.33.0): planned with 0.33.0's rules"),
    ("vllm==0.91", "vLLM 0.91 is newer than the newest release read (0.33.0)"),       # a typo for 0.9.1
    ("llama.cpp==b99999", "llama.cpp b99999 is newer than the newest release read (b11312)"),
    ("ollama==9.9.9", "Ollama 9.9.9 is newer than the newest release read (0.32.15)"),
    ("sglang==9.9", "SGLang 9.9 is newer than the newest release read (0.5.23)"),
])
def test_a_release_above_the_newest_read_is_said(runtime, said):
    assert any(n.startswith(said) for n in notes(runtime)), notes(runtime)


@pytest.mark.parametrize("runtime", ["vllm==0.33.0", "llama.cpp==b11312", "ollama==0.32.15", "sglang==0.5.23",
                                     "vllm==0.9.1", "vllm"])
def test_a_read_release_has_no_such_note(runtime):
    assert not [n for n in notes(runtime) if "newer than the newest release read" in n]


def test_vllm_below_its_oldest_read_release_is_refused_naming_the_range():
    with pytest.raises(InputError, match=r"^runtime: vllm==0\.0\.1: vLLM releases read are 0\.1\.0 – 0\.33\.0"):
        notes("vllm==0.0.1")
