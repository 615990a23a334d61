"""An architecture no llama.cpp build loads (runtimes/arch_support.NO_LLAMA_CPP: mllama, Llama 3.2 Vision) is refused
under llama.cpp — any build, named or not — and under Ollama from v0.30.0, in the loader's own words, with the
runtimes that do load it; Ollama v0.4.0–v0.24.0 plan it.

Independent sources (read for this test, not taken from the code under test):
- ggml-org/llama.cpp#14951 (b6019) and ollama/ollama#16490 (v0.30.4), #16547 (v0.30.5), #18486 (v0.34.1): the
  loader's line "error loading model: unknown model architecture: 'mllama'".
- ggml-org/llama.cpp#9663 / #13805: convert_hf_to_gguf.py answers "Model MllamaForConditionalGeneration is not
  supported".
- ollama/ollama#7300 (rick-github, 2024-10-21): vision support came with PR #6963, which v0.3.14 does not include.
- Troyanovsky/llama-vision-image-tagger#2 (2026-07-04): on Ollama 0.32.0 the model fails; going back to 0.24.0 runs it.
- vllm/model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS: MllamaForConditionalGeneration "0.10.2".
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.resources import files

from asking import ask

from runlocal.runtimes.arch_support import NO_BUILD_LOADS, NO_LLAMA_CPP

LOADER_LINE = "unknown model architecture: 'mllama'"
CONVERTER_LINE = "Model MllamaForConditionalGeneration is not supported"


def test_llama_cpp_refuses_mllama_in_its_own_words_whatever_the_build():
    for runtime in ("llama.cpp", "llama.cpp==b6019", "llama.cpp==b9452"):
        plan, _ = ask(f"runlocal check llama-3.2-11b-vision --runtime {runtime} --gpu 'rtx 4090'")
        refusal = plan.allocation.refusal or ""
        assert plan.verdict == "does_not_fit", runtime
        assert LOADER_LINE in refusal and CONVERTER_LINE in refusal, runtime
        assert "#14951" in refusal and "#9663" in refusal
        # the runtimes that load it, each checked by its source (module docstring)
        assert "transformers" in refusal and "vLLM 0.6.2–0.10.2" in refusal and "mlx-vlm" in refusal
        assert plan.speed["not_predicted"] == NO_BUILD_LOADS and plan.speed["decode_tokens_per_s"] is None
        assert plan.fixes == () and plan.max_context is None


def test_the_answer_prints_no_command_that_cannot_load_it():
    out = subprocess.run([sys.executable, "-m", "runlocal", "check", "llama-3.2-11b-vision", "--runtime", "llama.cpp",
                          "--gpu", "rtx-4090"], capture_output=True, text=True, timeout=300).stdout
    assert "PATH/TO" not in out and "-ngl" not in out
    assert "run: none" in out and "another runtime" in out and "update it" not in out


def test_ollama_v0_30_and_later_refuse_it_and_v0_4_to_v0_24_load_it():
    for runtime in ("ollama", "ollama==0.30.4", "ollama==0.30.5", "ollama==0.32.0"):
        plan, _ = ask(f"runlocal check llama-3.2-11b-vision --runtime {runtime} --gpu 'rtx 4090'")
        refusal = plan.allocation.refusal or ""
        assert plan.verdict == "does_not_fit" and LOADER_LINE in refusal, runtime
        assert "#16490" in refusal and "#18486" in refusal
        assert "OLLAMA_VERSION=0.24.0" in refusal        # the release the tagger thread went back to
        assert plan.speed["not_predicted"] == NO_BUILD_LOADS
    for runtime in ("ollama==0.4.0", "ollama==0.24.0"):
        plan, _ = ask(f"runlocal check llama-3.2-11b-vision --runtime {runtime} --gpu 'rtx 4090'")
        assert plan.allocation.refusal is None and plan.verdict == "fits", runtime
        step = next(s for s in plan.steps if s.label == "architecture")
        assert step.value == "mllama" and "v0.4.0" in step.formula
    plan, _ = ask("runlocal check llama-3.2-11b-vision --runtime ollama==0.3.14 --gpu 'rtx 4090'")
    assert plan.verdict == "does_not_fit" and "first loaded by Ollama v0.4.0" in plan.allocation.refusal
    assert plan.speed["not_predicted"] != NO_BUILD_LOADS      # an update does load it: "update it" stays right


def test_runtimes_that_load_it_still_plan_it():
    for runtime in ("transformers", "vllm==0.10.2"):
        plan, _ = ask(f"runlocal check llama-3.2-11b-vision --runtime {runtime} --gpu 'rtx 4090' --ctx 4096")
        assert plan.allocation.refusal is None or LOADER_LINE not in plan.allocation.refusal, runtime


def test_best_and_models_fits_refuse_or_leave_it_out():
    best = subprocess.run([sys.executable, "-m", "runlocal", "best", "llama-3.2-11b-vision", "--runtime", "llama.cpp"],
                          capture_output=True, text=True, timeout=300)
    assert best.returncode == 2 and LOADER_LINE in best.stderr + best.stdout
    assert "Traceback" not in best.stderr
    from runlocal.fits_here import models_fitting

    rows = models_fitting(24 << 30, 4096)
    assert rows and "llama-3.2-11b-vision" not in {r["alias"] for r in rows}
    assert "llama-3.2-3b" in {r["alias"] for r in rows}      # a plain llama of that family still listed


def test_every_catalog_model_has_an_architecture_llama_cpp_knows_or_is_refused():
    """By script over the catalog: each model's GGUF architecture (data/gguf_catalog_names.json) is a row of the
    llama.cpp architecture table (data/arch_support.json), or the model's type is one NO_LLAMA_CPP refuses."""
    names = json.loads(files("runlocal.data").joinpath("gguf_catalog_names.json").read_text(encoding="utf-8"))
    table = json.loads(files("runlocal.data").joinpath("arch_support.json").read_text(encoding="utf-8"))
    models = {m["alias"]: m for m in json.loads(files("runlocal.data").joinpath("models.json").read_text())["models"]}
    outside = sorted(alias for alias, row in names["models"].items() if row["arch"] not in table["llama_cpp"])
    assert outside == ["llama-3.2-11b-vision"]       # at this catalog; a new one must be read and placed
    for alias in outside:
        assert models[alias]["config"]["model_type"] in NO_LLAMA_CPP


def test_the_web_page_shows_the_refusal_and_no_command(tmp_path):
    import pytest

    pytest.importorskip("jinja2")
    from fastapi.testclient import TestClient

    from runlocal.testing.browser import served_app

    client = TestClient(served_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="x"),
                        base_url="http://127.0.0.1")
    from html import unescape

    page = unescape(client.get("/", params={"model": "llama-3.2-11b-vision", "gpu": "rtx-4090"}).text)
    assert LOADER_LINE in page and "PATH/TO" not in page and "Run it" not in page
    page = unescape(client.get("/", params={"model": "llama-3.2-11b-vision", "gpu": "rtx-4090",
                                            "runtime": "transformers"}).text)
    assert "Run it" in page and LOADER_LINE not in page


def test_mlx_lm_refuses_it_in_its_own_words():
    """mlx-lm imports mlx_lm.models.<model_type> and answers "Model type mllama not supported." where there is none
    (ml-explore/mlx-lm#321, mlx_lm.convert on Llama-3.2-11B-Vision-Instruct); runlocal's MLX plans are mlx-lm's."""
    plan, _ = ask("runlocal check llama-3.2-11b-vision --runtime mlx --gpu m3-max")
    assert plan.verdict == "does_not_fit" and "Model type mllama not supported." in (plan.allocation.refusal or "")
    assert "mlx-vlm" in plan.allocation.refusal and plan.speed["not_predicted"] == NO_BUILD_LOADS
    plan, _ = ask("runlocal check llama-3.2-3b --runtime mlx --gpu m3-max")
    assert plan.allocation.refusal is None
