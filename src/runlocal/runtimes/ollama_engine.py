"""Which engine an Ollama release runs a model on, and what that changes in memory (`--runtime ollama==X`).

Read in ollama/ollama at the release tags (data/ollama_engine.json, measurements/ollama_builds/engine_map.py):

  ≤ 0.5.x         the llama.cpp runner (CGO over the vendored llama.cpp) for every model; OLLAMA_NEW_ENGINE=1 starts
                  the runner with --ollama-engine (v0.5.13 llm/server.go), whose Go models (model/models) were
                  llama and mllama.
  0.6.0 – 0.29    llm/server.go NewLlamaServer: ``envconfig.NewEngine() || f.KV().OllamaEngineRequired()`` → the Go
                  engine ("ollama engine", runner/ollamarunner) where model.NewTextProcessor opens the model (its
                  architecture registered in model/models) and no separate projector file comes with it ("split vision
                  models aren't supported"); otherwise the llama.cpp runner ("switching to compatibility mode").
                  KV.OllamaEngineRequired grew from gemma3 (ab39e08eb, v0.6.0) to 29 names by v0.22.0 (qwen3 from
                  v0.12.0 — off again in v0.12.5 only — qwen3moe from v0.12.2, deepseek2 from v0.13.0, qwen35 /
                  qwen35moe from v0.17.1, gemma4 from v0.20.0); OLLAMA_NEW_ENGINE=1 adds the registered rest (llama,
                  qwen2, gemma2 …).
  ≥ 0.30.0        llama-server for every GGML model (9db4bda): OLLAMA_NEW_ENGINE no longer chooses an engine.

What the engine changes in memory, read at v0.24.0 (the last release of that era the map holds unchanged since v0.22.0):
the Go engine's KV cache (kvcache/causal.go Causal.Init, called by runner/ollamarunner/cache.go NewInputCache with
num_ctx = kv_size / num_parallel and the batch num_batch) holds roundUp(num_parallel × num_ctx, 256) cells for a
full-attention layer and roundUp(num_parallel × window + num_batch, 256) for a sliding-window one (the ggml backend's
CachePadding is 256 with flash attention on or off, ml/backend/ggml/ggml.go CacheConfig) — the same cells as
llama.cpp's unified cache and iSWA cache (n_ctx, and n_swa × n_seq + n_ubatch, padded to 256) where num_batch equals
n_ubatch, as Ollama passes them. Its compute graph is reserved at the worst-case batch (runner/ollamarunner
reserveWorstCaseGraph), as llama.cpp reserves its graph at n_ubatch. So runlocal plans a Go-engine release with
llama-server's bytes and says so in the plan — but for two models whose Go code keeps more than the window:
gpt-oss (model/models/gptoss/model.go, v0.11.0 on) and Gemma 4 (model/models/gemma4/model.go, v0.20.0 on) build their
sliding-window layers with kvcache.NewSWAMemCache(window, 4096, …): 4,096 cells a sequence, not the window's 128 /
1,024 (capped at the full cache where that is smaller). Their plans on a Go-engine release widen the window to 4,096
(go_engine_view). What else differs (the graph's own nodes, per model) is not modelled. Pure computation but for
reading the map.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import lru_cache

from ..memo import IdMemo
from ..model.spec import ModelSpec

ENGINE_MAP = "ollama_engine.json"
REQUIRED_FROM = (0, 6, 0)        # ab39e08eb: KV.OllamaEngineRequired ("auto detect models that require Ollama Engine")
LLAMA_SERVER_FROM = (0, 30, 0)   # 9db4bda: llama-server for every GGML model
# kvcache.NewSWAMemCache(window, memory, …) in the Go model: (architecture, sliding-layer cells a sequence, where)
SWA_MEMORY = {"gptoss": (4096, "model/models/gptoss/model.go (v0.11.0 on)"),
              "gemma4": (4096, "model/models/gemma4/model.go (v0.20.0 on)")}
_VIEWS = IdMemo(256)


def _key(arch: str) -> str:
    """An architecture compared without case or separators (HF model_type qwen3_moe against GGUF qwen3moe)."""
    return re.sub(r"[^a-z0-9]", "", arch.lower())


@lru_cache(maxsize=1)
def _rows() -> tuple[tuple[tuple[int, ...], str, frozenset[str], frozenset[str]], ...]:
    from importlib.resources import files

    doc = json.loads(files("runlocal.data").joinpath(ENGINE_MAP).read_text(encoding="utf-8"))
    return tuple(sorted((tuple(int(x) for x in v.split(".")), v, frozenset(map(_key, r["required"])),
                         frozenset(map(_key, r["registered"]))) for v, r in doc["releases"].items()))


def ollama_engine(version: tuple[int, ...] | None, arch: str, new_engine: bool = False,
                  split_projector: bool = False) -> tuple[str, str]:
    """("llama-server" | "go" | "llama.cpp runner", why, citing the tag and file) for a model of ``arch`` on this
    release; ``new_engine`` is OLLAMA_NEW_ENGINE=1, ``split_projector`` a projector pulled as its own file."""
    if version is None or version[:3] >= LLAMA_SERVER_FROM:
        return "llama-server", ("llama-server for every GGML model from v0.30.0 (9db4bda); OLLAMA_NEW_ENGINE chooses "
                                "no engine")
    rows = [row for row in _rows() if row[0] <= version[:3]]
    if not rows:
        return "llama.cpp runner", (f"Ollama before v{_rows()[0][1]} (the first release mapped): the llama.cpp runner "
                                    "for every model")
    _, mapped, required, registered = rows[-1]
    where = f"ollama/ollama v{mapped}"
    if version[:3] < REQUIRED_FROM and not new_engine:
        return "llama.cpp runner", (f"the llama.cpp runner for every model before v0.6.0 unless OLLAMA_NEW_ENGINE=1 "
                                    f"({where}: llm/server.go)")
    wanted = new_engine or _key(arch) in required
    asked = ("OLLAMA_NEW_ENGINE=1" if new_engine and _key(arch) not in required else
             f"{arch} is in KV.OllamaEngineRequired at {where} (fs/ggml/ggml.go)")
    if not wanted:
        how = ("OLLAMA_NEW_ENGINE=1 would move it to the Go engine, which registers it"
               if _key(arch) in registered else "the Go engine does not register it")
        return "llama.cpp runner", (f"{arch} is not in KV.OllamaEngineRequired at {where} (fs/ggml/ggml.go): the "
                                    f"llama.cpp runner; {how} (model/models)")
    if _key(arch) not in registered:
        return "llama.cpp runner", (f"{asked}, but the Go engine does not register {arch} at {where} (model/models): "
                                    "\"switching to compatibility mode\", the llama.cpp runner (llm/server.go)")
    if split_projector:
        return "llama.cpp runner", (f"{asked}, but its projector is a separate file: \"split vision models aren't "
                                    "supported\", the llama.cpp runner (llm/server.go NewLlamaServer)")
    return "go", (f"{asked}: the Go engine (runner/ollamarunner); its KV cache and graph reservation planned as "
                  "llama-server's (the same cells: kvcache/causal.go Causal.Init pads to 256, as llama.cpp does)")


def go_engine_view(model: ModelSpec, arch: str) -> tuple[ModelSpec, str]:
    """``model`` as the Go engine caches it (sliding windows widened to SWA_MEMORY's cells for the architectures whose
    Go code asks for more), and a plan step's words; the same object and "" where nothing changes."""
    memory, where = SWA_MEMORY.get(_key(arch), (0, ""))
    narrower = sorted({a.window for a in model.attention_layers if a.kind == "sliding" and a.window and a.window < memory})
    if not narrower:
        return model, ""

    def widen() -> ModelSpec:
        layers = tuple(replace(layer, attention=replace(layer.attention, window=memory))
                       if layer.attention is not None and layer.attention.kind == "sliding" else layer
                       for layer in model.layers)
        return replace(model, layers=layers)

    return _VIEWS.get(model, "go-swa", widen), (
        f"the Go engine keeps {memory:,} cells a sequence in each sliding-window layer, not the "
        f"{'/'.join(f'{w:,}' for w in narrower)}-token window (kvcache.NewSWAMemCache(window, {memory}), {where}; "
        "kvcache/causal.go Causal.Init: num_parallel × memory + num_batch, padded to 256)")


__all__ = ["go_engine_view", "ollama_engine"]
