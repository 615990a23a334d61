"""review17 finding 12: an Ollama log with its offload line gets num_gpu N and num_ctx computed from that line's own
figures; the system-memory refusal's computed fixes are not repeated by the knowledge base's figureless ones.

OLLAMA_LOG is review17's /tmp/r17_ollama.log (tests/fixtures/review17/README.md): a realistic text written from
Ollama 0.12.0's messages (the offload line of llm/memory.go, the runner command of llm/server.go) and ggml's cudaMalloc
failure — the public corpus (measurements/public_errors, tuning) holds no paste with both the offload line and a failed
allocation after it.
"""

from __future__ import annotations

import re
from pathlib import Path

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

FIXTURES = Path(__file__).parents[1] / "fixtures/review17"
OLLAMA_LOG = (FIXTURES / "ollama_0.12.0_compute_oom.log").read_text()
ENTRY = Path(__file__).parents[2] / "src/runlocal/data/errors/ollama-system-memory.md"


def answer(text: str) -> dict:
    return with_computed_fixes(diagnose_text(text), None)


def test_num_ctx_from_the_kv_figure():
    doc = answer(OLLAMA_LOG)
    ctx = doc["fixes"][0]
    # by hand: memory.required.kv 3.0 GiB / --ctx-size 32,768 = 96 KiB per token; the failed 1,126 MiB is
    # 1,126 × 1,024 / 96 = 12,010.7 → 12,011 tokens; 32,768 − 12,011 = 20,757 → 20,736 (a multiple of 256)
    assert ctx["command"] == "OLLAMA_CONTEXT_LENGTH=20736 OLLAMA_NUM_PARALLEL=1 ollama serve", ctx
    assert "96 KiB per token" in ctx["effect"] and "12,011" in ctx["effect"]


def test_num_gpu_from_the_layer_figures():
    doc = answer(OLLAMA_LOG)
    layers = next(f for f in doc["fixes"] if "num_gpu" in f["title"])
    # by hand: (17.0 GiB repeating weights + 3.0 GiB KV) / (49 − 1 output layer = 48 blocks) = 426.7 MiB a layer;
    # 1,126 / 426.7 = 2.64 → 3 layers off; 49 on the GPU − 3 = 46
    assert "num_gpu 46" in layers["title"] and "PARAMETER num_gpu 46" in layers["command"]
    assert "427 MiB" in layers["effect"]


def test_the_generic_num_gpu_and_4096_lines_give_way():
    doc = answer(OLLAMA_LOG)
    commands = [f["command"] for f in doc["fixes"]]
    assert not any("num_gpu N" in c for c in commands)            # the knowledge base's "N below …"
    assert not any("OLLAMA_CONTEXT_LENGTH=4096" in c for c in commands)


def test_a_runner_that_started_computes_nothing():
    # the same placement, then the runner up (llm/server.go "llama runner started in"): nothing failed
    head = OLLAMA_LOG[:OLLAMA_LOG.index("ggml_backend_cuda")]
    started = head + 'time=2025-09-20T10:00:09.000Z level=INFO source=server.go:1289 msg="llama runner started in 3.02 seconds"\n'
    assert not any(t in f["title"] for f in answer(started)["fixes"] for t in ("num_ctx 20,736", "num_gpu 46"))


def test_system_memory_refusal_not_repeated():
    doc = answer("Error: model requires more system memory (21.4 GiB) than is available (15.2 GiB)")
    commands = [f["command"] for f in doc["fixes"]]
    assert len(commands) == len(set(commands))
    # the computed lines carry the shortfall, 21.4 − 15.2 = 6.2 GiB, and replace the entry's figureless ones
    assert "6.2 GiB" in doc["fixes"][0]["title"] and "6.2 GiB" in doc["fixes"][1]["title"]
    assert sum("SMALLER_TAG" in c for c in commands) == 1
    assert sum(c.startswith("ollama ps && ollama stop") for c in commands) == 1
    # the entry still holds the lines the computed fixes replace, word for word
    entry = ENTRY.read_text()
    for c in (doc["fixes"][0]["command"], doc["fixes"][1]["command"]):
        assert re.sub(r"'", "''", c) in entry, c


def test_a_split_over_two_gpus_computes_nothing():
    # memory.available="[22.9 GiB 22.9 GiB]": which device failed and what share of the layers it held is not said
    two = OLLAMA_LOG.replace('memory.available="[22.9 GiB]"', 'memory.available="[22.9 GiB 22.9 GiB]"')
    assert not any(t in f["title"] for f in answer(two)["fixes"] for t in ("num_ctx 20,736", "num_gpu 46"))
