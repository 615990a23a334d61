"""review16 findings 12 and 13 (diagnose): a message only one runtime prints names that runtime; the Ollama entries'
commands are no fixed example model or layer count; SGLang's tensor-parallel flag is spelled as SGLang spells it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

ERRORS = Path(__file__).parents[2] / "src/runlocal/data/errors"

# vLLM's own sentence (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory), Ollama's server message
# (llm/server.go), and SGLang's (python/sglang/srt/mem_cache/memory_pool.py): each printed by that runtime alone
VLLM_KV = ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
           "stored in KV cache (43808). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
           "initializing the engine.")
OLLAMA_RAM = "Error: model requires more system memory (21.3 GiB) than is available (15.1 GiB)"
SGLANG_MEM = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."


def answer(text: str, runtime: str | None = None) -> dict:
    return with_computed_fixes(diagnose_text(text, runtime=runtime), runtime)


@pytest.mark.parametrize("text, runtime, who", [(VLLM_KV, "vllm", "vLLM"), (OLLAMA_RAM, "ollama", "Ollama"),
                                               (SGLANG_MEM, "sglang", "SGLang")])
def test_a_message_only_one_runtime_prints_names_it(text, runtime, who):
    doc = answer(text)
    assert doc["title"].startswith(f"{who}: ")           # the entry it matched is that runtime's own message
    assert "runtime_note" not in doc, doc.get("runtime_note")
    assert not any("names no runtime" in (f.get("effect") or "") for f in doc["fixes"])
    # the same answer as when the user names the runtime
    named = answer(text, runtime=runtime)
    assert [f["command"] for f in doc["fixes"]] == [f["command"] for f in named["fixes"]]


def test_sglangs_tensor_parallel_flag_is_tp_size():
    # python/sglang/srt/server_args.py: "--tensor-parallel-size" / "--tp-size"; "--tp" works only by argparse's
    # prefix matching
    doc = answer(SGLANG_MEM)
    sglang = [f["command"] for f in doc["fixes"] if "sglang.launch_server" in f["command"]]
    assert sglang and not any(re.search(r"--tp\b(?!-)", c) for c in sglang)
    assert any("--tp-size 2" in c for c in sglang)
    for md in ERRORS.glob("*.md"):
        assert not re.search(r"sglang\.launch_server[^']*--tp (?=\d)", md.read_text()), md.name


def test_ollama_entries_carry_no_fixed_example_model_or_layer_count():
    for name in ("ollama-system-memory.md", "ollama-layers-left-off.md", "ollama-runner-cuda-oom.md"):
        text = (ERRORS / name).read_text()
        assert "llama3.1:8b-instruct-q4_K_M" not in text, name     # whatever model failed
        assert "num_gpu 20" not in text, name                      # a constant, not the log's figure
    doc = answer(OLLAMA_RAM)
    # the knowledge base's line, given with the log's shortfall by the computed fix that replaces it (review17 §12)
    smaller = next(f for f in doc["fixes"] if "SMALLER_TAG" in f["command"])
    assert "NAME:SMALLER_TAG" in smaller["command"] and "ollama.com/library/NAME/tags" in smaller["command"]
