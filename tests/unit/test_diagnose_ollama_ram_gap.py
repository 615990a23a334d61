"""review22 #12: Ollama's "model requires more system memory (58.0 GiB) than is available (30.5 GiB)" for gpt-oss:120b
(continuedev/continue#9827, 2026-01-23) was answered with OLLAMA_CONTEXT_LENGTH=4096 and "q4_K_M, q3_K_M" tags. A
shorter context frees at most the KV cache: 27.5 GiB at num_ctx 4,096 would take 27.5 GiB / 4,096 = 6.875 MiB a token,
twenty times Llama-3.1-70B's f16 cache (80 layers × 8 KV heads × (128 + 128) × 2 B = 320 KiB). So the context and
KV-cache lines are replaced by the condition, and no tag the library may not have is named."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

PASTE_9827 = "Error: model requires more system memory (58.0 GiB) than is available (30.5 GiB)\n"


def test_a_gap_no_context_can_close_gets_no_context_fix():
    doc = with_computed_fixes(diagnose_text(PASTE_9827))
    assert doc["category"] == "ollama_system_memory"
    commands = " ".join(f["command"] for f in doc["fixes"])
    assert "OLLAMA_CONTEXT_LENGTH" not in commands and "OLLAMA_KV_CACHE_TYPE" not in commands
    assert "q3_K_M" not in commands
    cond = next(f for f in doc["fixes"] if f["title"].startswith("A shorter num_ctx"))
    assert "27.5 GiB" in cond["title"] and "6.88 MiB a token" in cond["effect"]
    where = doc["fixes"][-1]
    assert "58 GiB" in where["title"] and "--ram 58G" in where["command"]
