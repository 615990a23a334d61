"""Which engine each Ollama release runs a model on (runtimes/ollama_engine.py), checked against the lines read in
ollama/ollama at the tags (git show vX.Y.Z:<file>), written out here:

  v0.5.13 llm/server.go       if envconfig.NewEngine() { finalParams = append(finalParams, "--ollama-engine") }
  v0.6.0  fs/ggml/ggml.go     func (kv KV) OllamaEngineRequired() bool { return kv.Architecture() == "gemma3" }
  v0.11.0 fs/ggml/ggml.go     OllamaEngineRequired: gemma3, gemma3n, mistral3, llama4, mllama, qwen25vl, gptoss
  v0.12.0 fs/ggml/ggml.go     … "qwen3" added;  v0.12.5: "qwen3" absent (qwen3moe kept);  v0.12.6: back
  v0.12.0 llm/server.go       if envconfig.NewEngine() || f.KV().OllamaEngineRequired() { … NewTextProcessor …
                              "model not yet supported by Ollama engine, switching to compatibility mode" }
  v0.12.0 model/models        model.Register("llama" …) — registered, not required: OLLAMA_NEW_ENGINE=1 moves it
  v0.24.0 model/models/gptoss/model.go   kvcache.NewSWAMemCache(int32(c.Uint("attention.sliding_window")), 4096, …)
  v0.24.0 kvcache/causal.go   cacheSize = (maxSequences * int(c.swaMemorySize)) + maxBatch; roundUp(…, CachePadding)
  v0.24.0 ml/backend/ggml/ggml.go  CacheConfig{CachePadding: 256, …} (flash attention on or off)
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.runtimes.ollama_engine import ollama_engine


@pytest.mark.parametrize("version, arch, new_engine, engine", [
    ((0, 5, 13), "llama", False, "llama.cpp runner"),   # no OllamaEngineRequired yet
    ((0, 5, 13), "llama", True, "go"),                  # --ollama-engine; llama registered
    ((0, 6, 0), "gemma3", False, "go"),                 # ab39e08eb: gemma3 required
    ((0, 6, 0), "llama", False, "llama.cpp runner"),
    ((0, 11, 0), "qwen3", False, "llama.cpp runner"),   # registered, not required
    ((0, 11, 0), "gptoss", False, "go"),
    ((0, 12, 0), "qwen3", False, "go"),
    ((0, 12, 5), "qwen3", False, "llama.cpp runner"),   # dropped in v0.12.5 only
    ((0, 12, 6), "qwen3", False, "go"),
    ((0, 12, 0), "llama", True, "go"),                  # OLLAMA_NEW_ENGINE=1 on a registered architecture
    ((0, 12, 0), "phi3", True, "llama.cpp runner"),     # not registered: compatibility mode
    ((0, 30, 0), "gemma3", True, "llama-server"),       # 9db4bda: llama-server for every GGML model
])
def test_engine_per_release(version, arch, new_engine, engine):
    got, why = ollama_engine(version, arch, new_engine)
    assert got == engine, why


def test_split_projector_falls_back():
    got, why = ollama_engine((0, 12, 0), "gemma3", split_projector=True)
    assert got == "llama.cpp runner" and "split vision models" in why


def _kv(runtime: str) -> int:
    plan = check(CheckRequest(model="gpt-oss-20b", gpu="rtx-4090", runtime=runtime, ctx=32768,
                              use_measurements=False))[0]
    step = next(s for s in plan.allocation.steps if s.label == "KV cache")
    return int(step.value.split()[0].replace(",", ""))


def test_gpt_oss_sliding_layers_keep_4096_cells_on_the_go_engine():
    # gpt-oss-20b: 24 layers, alternating sliding (window 128) and full; 8 KV heads × 64 × (K + V) × 2 B = 2,048 B a
    # cell a layer. Ollama 0.12.0's num_batch is api/types.go DefaultOptions' 512 (v0.12.0 :835; server/sched.go has no
    # automaticGenerationBatch before v0.30.0, 9db4bdbad), llm/server.go passing min(num_batch, num_ctx).
    # Go engine (v0.12.0): full 12 × 2,048 × 32,768 + sliding 12 × 2,048 × roundUp(1 × 4,096 + 512, 256) = 4,608
    go = 12 * 2048 * 32768 + 12 * 2048 * 4608
    assert _kv("ollama==0.12.0") == go == 918_552_576
    # v0.30.0 runs llama-server: the iSWA cache's roundUp(128 × 1 + 1,024, 256) = 1,280 cells a sliding layer
    assert _kv("ollama==0.30.0") == 12 * 2048 * 32768 + 12 * 2048 * 1280 == 836_763_648
    # v0.11.0 (batch 512 as well): roundUp(4,096 + 512, 256) = 4,608
    assert _kv("ollama==0.11.0") == 12 * 2048 * 32768 + 12 * 2048 * 4608
