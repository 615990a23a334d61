"""How many layers to take off a GPU whose compute buffer did not fit, from the log's own figures.

llama.cpp allocates a device's weights, then its KV cache, then its compute buffer (src/llama-context.cpp: the
compute buffers are reserved after the memory module). When the compute buffer is the allocation that failed, the
device lacked ``weights + KV + compute − free`` bytes. Each layer moved to system memory takes its weights and its
KV cells with it (llama.cpp keeps a layer's KV cache on the layer's device: src/llama-kv-cache.cpp, one buffer per
device), while the compute buffer stays about as large (it is sized by the largest graph split on the device). So the
layers to move are the shortfall ÷ the bytes one layer holds there, rounded up — not the knowledge base's fixed
"num_gpu 20".

Pure computation over the figures :mod:`.extract` reads; :mod:`.fixes` calls it.
"""

from __future__ import annotations

import math
from typing import Any

from ..units import MiB, format_bytes
from . import ollama_fixes

# Ollama's "inference compute" line gives the memory free before the runner starts; the runner's CUDA/ROCm context
# then takes some of it, which Ollama itself reserves as the GPU's minimum memory (discover/gpu.go
# cudaMinimumMemory = rocmMinimumMemory = 457 MiB). llama.cpp's own "using device … MiB free" is measured by the
# runner, after its context exists, so nothing is reserved for that figure.
OLLAMA_MINIMUM_MEMORY = 457 * MiB


def compute_buffer_layers(ex: dict[str, Any], ollama: bool, device: str | None, free: int | None,
                          weights: int) -> list[dict[str, str]]:
    """The number of layers to keep on ``device`` when its compute buffer failed after every figure it needs is in
    the log: ``free`` before loading, the ``weights`` and KV cache placed there, the compute buffer asked for and
    the layers on it (``ollama``: the log is Ollama's, so the knob is num_gpu). Nothing when a figure is missing or
    the figures say the buffers fitted (something else took the memory)."""
    if not ex.get("compute_alloc_failed"):
        return []
    compute, layers = ex.get("requested_bytes"), ex.get("layers_offloaded")
    kv = (ex.get("kv_by_device") or {}).get(device) or ex.get("kv_buffer_bytes")
    if not (compute and layers and free and weights and kv):
        return []
    reserved = OLLAMA_MINIMUM_MEMORY if device not in (ex.get("free_by_device") or {}) else 0
    need = int(weights) + int(kv) + int(compute)
    short = need - (int(free) - reserved)
    per_layer = (int(weights) + int(kv)) / int(layers)
    off = math.ceil(short / per_layer) if short > 0 else 0
    keep = int(layers) - off
    if off == 0 or keep < 1:
        return []
    where = device or "the GPU"
    reserve = (f" less the {format_bytes(reserved)} Ollama reserves for the runner's own context (discover/gpu.go)"
               if reserved else "")
    knob, command = ollama_fixes.set_option("num_gpu", keep, f"gpu{keep}", ollama, ex)
    return [{"title": f"Keep {keep} of the {int(layers)} layers on {where}: {knob}",
             "command": command,
             "effect": f"{format_bytes(weights)} of weights + {format_bytes(kv)} of KV cache + the "
                       f"{format_bytes(compute)} compute buffer need {format_bytes(need)} on {where}, "
                       f"{format_bytes(short)} more than the {format_bytes(free)} free{reserve}; each of the "
                       f"{int(layers)} layers there holds {format_bytes(per_layer)} of weights and KV cache on average, "
                       f"so {off} of them ({format_bytes(off * per_layer)}) moved to system memory make the room "
                       "(the compute buffer stays about as large); a smaller micro-batch shrinks the buffer itself"}]
