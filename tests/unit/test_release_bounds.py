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


def test_ollama_newest_commit_read_is_the_v0_33_0_rc2_pre_release_launching_as_v0_32_15():
    """review20b: plans cited v0.33.0-rc2's launch line while the bound said 0.32.15. Read in the ollama/ollama mirror
    (main = fb3076099 = v0.33.0-rc2, 2026-08-21, the newest tag it holds): `git show v0.32.15:LLAMA_CPP_VERSION` and
    `v0.33.0-rc2:LLAMA_CPP_VERSION` both print b10488, and `git diff --stat v0.32.15 v0.33.0-rc2 -- llm/ server/routes.go
    server/sched.go envconfig/ llama/ cmake/local.cmake LLAMA_CPP_VERSION` is empty (the rc changed only
    server/model_recommendations.go, server/download.go, discover/native_probe.go's lint comments, cmake/mlx and tests).
    So the rc launches llama-server exactly as 0.32.15 does; the bumps after it (ollama/ollama PR #18003 "llama.cpp:
    version bump b10630", 2026-08-25; PR #18317 "… b10864", 2026-09-08) were not read, so the current release is not
    said to build b10864."""
    said = [n for n in notes("ollama==0.33.0") if "newer than the newest release read (0.32.15)" in n]
    assert len(said) == 1 and "v0.33.0-rc2 (fb30760, 2026-08-21) was read too" in said[0]
    plan = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-3090", runtime="ollama", ctx=4096,
                              use_measurements=False))[0]
    step = next(s for s in plan.steps if s.label == "runtime version")
    assert "v0.33.0-rc2" in step.formula and "b10488" in step.formula and "b10864" not in step.formula
    # "planned as it": the current release and ollama==0.32.15 give the same bytes (a dense, a delta-net and an
    # MLA model on a 24 GB and an 80 GB card)
    for model in ("llama-3.1-8b", "qwen3-next-80b-a3b", "deepseek-v3"):
        for gpu in ("rtx-4090", "h100"):
            current, named = (check(CheckRequest(model=model, gpu=gpu, runtime=r, use_measurements=False))[0]
                              for r in ("ollama", "ollama==0.32.15"))
            assert current.allocation.devices == named.allocation.devices, (model, gpu)
            assert current.allocation.settings.ctx == named.allocation.settings.ctx
