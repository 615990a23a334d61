"""Ollama placed every layer it estimated would fit, then an allocation failed: the room to make, from the log's
own offload line.

Ollama's offload line (llm/memory.go EstimateGPULayers, logged "offload to cuda … layers.model=49 layers.offload=49
memory.required.kv=… memory.weights.repeating=…") gives what one layer costs on the GPU: its share of the repeating
weights and of the KV cache, both split evenly over the model's blocks (layers.model counts the output layer too:
blocks = layers.model − 1). The runner's failed allocation (ggml's "allocating N MiB on device 0: cudaMalloc failed")
is the room to make. The log does not say how much was free when it failed, so the whole allocation is freed, which
covers it even when nothing was: that is the margin. Two knobs make it:
- num_gpu: each layer moved to system memory takes its weights and KV cells with it (the compute buffer stays about as
  large): layers to move = allocation / bytes per layer, rounded up;
- num_ctx: the KV cache is linear in num_ctx × parallel (llm/llama_server.go passes -c num_ctx × parallel), so a
  context shorter by allocation / KV bytes per token frees it (the graph estimate shrinks with it too: safe side).

Pure computation over the extracted figures; diagnose/fixes.py calls it.
"""

from __future__ import annotations

import math
from typing import Any

from . import ollama_fixes

CTX_STEP = 256   # num_ctx rounded down to llama.cpp's KV padding (src/llama-context.cpp), as fixes.CTX_PAD


def _b(n: float) -> str:
    from ..units import format_bytes

    return format_bytes(int(n))


def _fix(title: str, command: str, effect: str) -> dict[str, str]:
    return {"title": title, "command": command, "effect": effect}


def _figures(ex: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """(failed allocation, layers on the GPU, blocks, KV bytes) when the log has the offload line and a failure."""
    req, placed, model = ex.get("requested_bytes"), ex.get("ollama_layers_offload"), ex.get("ollama_layers_model")
    kv = ex.get("ollama_required_kv_bytes")
    if not (req and placed and model and kv) or int(model) < 2 or ex.get("ollama_runner_started"):
        return None
    if int(ex.get("ollama_gpu_count") or 1) > 1:
        return None   # split over GPUs: the failing device's share of the layers and KV is not in the line
    if not (ex.get("compute_alloc_failed") or ex.get("kv_alloc_failed")):
        return None
    return int(req), int(placed), int(model) - 1, int(kv)


def layer_fix(ex: dict[str, Any]) -> dict[str, str] | None:
    """num_gpu: the layers on the GPU less those whose weights and KV cells hold the failed allocation."""
    figures, repeating = _figures(ex), ex.get("ollama_weights_repeating_bytes")
    if figures is None or not repeating:
        return None
    req, placed, blocks, kv = figures
    per_layer = (int(repeating) + kv) / blocks
    off = math.ceil(req / per_layer)
    keep = placed - off            # num_gpu counts the output layer as Ollama's layers.offload does
    if keep < 1:
        return None
    knob, command = ollama_fixes.set_option("num_gpu", keep, f"gpu{keep}", True, ex)
    return _fix(f"Keep {keep} of the {placed} layers on the GPU: {knob}", command,
                f"a layer holds ({_b(repeating)} of repeating weights + {_b(kv)} of KV cache) / {blocks} blocks = "
                f"{_b(per_layer)} on the GPU (Ollama's offload line); the {_b(req)} allocation that failed needs "
                f"{off} of them moved to system memory ({_b(off * per_layer)}): freeing the whole allocation covers "
                "it even if nothing was free when it failed")


def context_fix(ex: dict[str, Any], reads_env: bool) -> dict[str, str] | None:
    """num_ctx: the context less the tokens whose KV bytes hold the failed allocation (``reads_env``: the release
    reads OLLAMA_CONTEXT_LENGTH, else a Modelfile)."""
    figures, n_ctx = _figures(ex), ex.get("n_ctx")
    if figures is None or not n_ctx:
        return None
    req, _, _, kv = figures
    n_ctx, parallel = int(n_ctx), int(ex.get("n_seq_max") or 1)
    per_token = kv / n_ctx
    keep = (n_ctx - math.ceil(req / per_token)) // parallel // CTX_STEP * CTX_STEP
    if keep < CTX_STEP:
        return None
    command = ollama_fixes.context_command(keep, reads_env)
    if reads_env:   # the figure is for this many sequences: num_ctx × parallel is the cache (llm/llama_server.go)
        command = command.replace(" ollama serve", f" OLLAMA_NUM_PARALLEL={parallel} ollama serve")
    return _fix(f"Use num_ctx {keep:,}: its KV cache gives back the failed allocation", command,
                f"the KV cache is {_b(kv)} for {n_ctx:,} tokens ({_b(per_token)} per token, Ollama's offload line and "
                f"the runner's --ctx-size); {_b(req)} failed, so {math.ceil(req / per_token):,} tokens fewer free it "
                f"even if nothing was free when it failed: num_ctx {n_ctx // parallel:,} → {keep:,}"
                + (f" with {parallel} requests at once" if parallel > 1 else ""))


def room_fixes(ex: dict[str, Any], reads_env: bool) -> list[dict[str, str]]:
    """Both, the context first (it keeps every layer on the GPU)."""
    return [f for f in (context_fix(ex, reads_env), layer_fix(ex)) if f]
