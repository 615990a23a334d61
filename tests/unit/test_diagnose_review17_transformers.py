"""review17 finding 13: a Python traceback through `model.generate(` with a PyTorch OOM is a transformers program,
answered with transformers' commands (no vLLM ones); the quantized-cache fix says 4 bits and names optimum-quanto.

Texts (tests/fixtures/review17/README.md): llava-1541.txt, the public paste of haotian-liu/LLaVA#1541
(measurements/public_errors/round21.jsonl, tuning); generate_torch_oom.txt, review17's /tmp/r17_torch.txt, written from
PyTorch's own OOM message (not a public paste).

The bits: transformers' quanto backend takes only 2 or 4 (src/transformers/cache_utils.py, QuantoQuantizedCache:
"`nbits` for `quanto` backend has to be one of [`2`, `4`]"; docs "KV cache strategies", Quantized cache:
cache_implementation="quantized" needs the optimum-quanto package).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

FIXTURES = Path(__file__).parents[1] / "fixtures/review17"


def answer(text: str, runtime: str | None = None) -> dict:
    return with_computed_fixes(diagnose_text(text, runtime=runtime), runtime)


@pytest.mark.parametrize("name", ["llava-1541.txt", "generate_torch_oom.txt"])
def test_a_generate_traceback_is_transformers(name):
    doc = answer((FIXTURES / name).read_text())
    assert doc["extracted"]["runtime"] == "transformers"
    assert "runtime_note" not in doc, doc.get("runtime_note")      # named by the call, not guessed
    commands = [f["command"] for f in doc["fixes"]]
    assert commands and not any("vllm" in c for c in commands), commands


def test_the_quantized_cache_fix_says_4_bits_and_optimum_quanto():
    doc = answer((FIXTURES / "generate_torch_oom.txt").read_text())
    fix = next(f for f in doc["fixes"] if 'cache_implementation="quantized"' in f["command"])
    assert "4 bits" in fix["title"] and "8 bits" not in fix["title"]
    assert '"nbits": 4' in fix["command"] and "optimum-quanto" in fix["command"]


def test_a_vllm_log_keeps_its_8_bit_line():
    # the 8-bit title stays with the commands that are 8 bits: vLLM's / SGLang's fp8
    text = (FIXTURES / "generate_torch_oom.txt").read_text()
    doc = answer(text, runtime="vllm")
    fix = next(f for f in doc["fixes"] if "--kv-cache-dtype" in f["command"])
    assert "8 bits" in fix["title"] and "fp8" in fix["command"]
    assert not any("quanto" in f["command"] for f in doc["fixes"])
