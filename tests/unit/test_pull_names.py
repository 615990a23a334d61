"""Names other tools pull a model by (review17 finding 15): an Ollama library tag is planned under Ollama as the catalog
model it names; Ollama's hf.co/<repo>:<quant> and llama-server's <repo>:<quant> resolve, offline, as the catalog
model whose GGUF repo that is, at that quant.

Independent sources: Ollama's library (https://ollama.com/library/gpt-oss/tags: gpt-oss:20b is the 14 GB MXFP4 build
OpenAI published; qwen3:30b is qwen3:30b-a3b at Q4_K_M, the library's default), Hugging Face's Ollama guide
(`ollama run hf.co/{username}/{repository}:{quantization}`, https://huggingface.co/docs/hub/ollama) and llama.cpp's
common/arg.cpp (`-hf <user>/<model>[:quant]`, "quant is optional, case-insensitive, default to Q4_K_M"). The plan of
each name is compared with the plan of the catalog model it names, and the printed command pulls the name typed."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.errors import RunlocalError
from runlocal.request import CheckRequest


def _check(model, **kw):
    return check(CheckRequest(model=model, gpu="rtx-4090", ram="64G", **kw))


@pytest.mark.parametrize(("tag", "alias", "quant"), [
    ("gpt-oss:20b", "gpt-oss-20b", "MXFP4_MOE"),      # the library's one gpt-oss 20b build
    ("qwen3:30b", "qwen3-30b-a3b", "Q4_K_M"),          # the library's default quant
    ("gemma3:27b", "gemma-3-27b", "Q4_K_M"),
    ("qwen3:30b-a3b-q8_0", "qwen3-30b-a3b", "Q8_0"),   # a full tag names its quant
])
def test_an_ollama_tag_is_planned_under_ollama_as_the_model_it_names(tag, alias, quant):
    plan, notes = _check(tag)
    same, _ = _check(alias, runtime="ollama", quant=quant)
    assert (plan.model.id, plan.runtime, plan.weights.quant) == (alias, "ollama", quant)
    assert plan.weights.total == same.weights.total and plan.allocation.settings.ctx == same.allocation.settings.ctx
    said = [n for n in notes if n.startswith(f"{tag}: an Ollama library tag")]
    assert len(said) == 1 and "planned under Ollama" in said[0] and f"check {alias} plans it under llama.cpp" in said[0]


def test_a_runtime_asked_for_is_kept():
    plan, notes = _check("qwen3:30b", runtime="vllm")
    assert plan.runtime == "vllm" and plan.model.id == "qwen3-30b-a3b"
    assert not any("planned under Ollama" in n for n in notes)
    plan, _ = _check("gpt-oss:20b", runtime="llama.cpp==b7000")
    assert plan.runtime == "llama.cpp" and plan.weights.quant == "MXFP4_MOE"


def test_ollamas_hub_name_and_llama_servers_hf_name_resolve_offline():
    ollama, notes = _check("hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M")
    assert (ollama.model.id, ollama.runtime, ollama.weights.quant) == ("qwen3-8b", "ollama", "Q4_K_M")
    assert any("Ollama's Hub name" in n for n in notes)
    server, notes = _check("unsloth/Qwen3-8B-GGUF:Q8_0")
    same, _ = _check("qwen3-8b", quant="Q8_0")
    assert (server.model.id, server.runtime, server.weights.quant) == ("qwen3-8b", "llama.cpp", "Q8_0")
    assert server.weights.total == same.weights.total
    assert "-hf unsloth/Qwen3-8B-GGUF:Q8_0" in server.command      # the command pulls the name typed
    assert any("llama-server's -hf name" in n for n in notes)
    # the quant is case-insensitive, as llama-server reads it
    assert _check("unsloth/Qwen3-8B-GGUF:q8_0")[0].weights.quant == "Q8_0"


@pytest.mark.parametrize("name", ["qwen3:999b", "hf.co/unsloth/NotARepo-GGUF:Q4_K_M", "nolibrary:7b"])
def test_names_that_are_not_catalog_models_stay_unknown(name):
    with pytest.raises(RunlocalError, match="unknown model"):
        _check(name)
