"""How many layers to take off a GPU whose compute buffer or weights buffer did not fit, from the log's own figures.

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


# llama.cpp's own fitting keeps 1024 MiB free per device by default (common/fit.cpp, PR #16653); the KV cache and
# the compute buffer are allocated after the weights (src/llama-context.cpp) and need that room
WEIGHTS_MARGIN = 1024 * MiB


def weights_buffer_layers(ex: dict[str, Any], ollama: bool, device: str | None,
                          free: int | None) -> list[dict[str, str]]:
    """How many layers to keep on the one GPU whose weights buffer failed, from the log's own figures: the buffer
    it could not allocate ("allocating N MiB on device 0: cudaMalloc failed", the model buffer of every layer placed
    there), the layers placed there, and the memory free before loading ("using device CUDA0 (…) - N MiB free").
    llama.cpp allocates one weights buffer per device before any context (llama_model::load_tensors: "unable to
    allocate %s buffer"), and prints "offloaded N/M layers" only after it, so the layers placed are the -ngl the
    command gave (capped at n_layer + 1: the repeating layers and the output layer), Ollama's layers.offload, or —
    said so — all n_layer + 1. Each layer then holds about buffer ÷ layers; what fits is free less llama.cpp's 1 GiB
    margin for the KV cache and compute buffer. Nothing for several GPUs (how the layers were split is not said)."""
    if not ex.get("weights_alloc_failed") or len(ex.get("free_by_device") or {}) > 1:
        return []
    failed, n_layer = ex.get("requested_bytes"), ex.get("n_layer")
    if not (failed and free and n_layer):
        return []
    offloadable = int(n_layer) + 1
    placed = ex.get("ollama_layers_offload") if ollama else None
    given = ex.get("n_gpu_layers")
    if placed:
        layers, how = int(placed), "Ollama's layers.offload"
    elif given is not None and int(given) > 0:
        layers, how = min(int(given), offloadable), f"-ngl {int(given)} on the command line"
    else:
        layers, how = offloadable, "no -ngl in the log: taken as all of them"
    per_layer = int(failed) / layers
    keep = min(int((int(free) - WEIGHTS_MARGIN) // per_layer), layers - 1)
    where = device or "the GPU"
    figures = (f"the {format_bytes(failed)} weights buffer for {layers} layers on {where} ({how}) is "
               f"{format_bytes(per_layer)} a layer; {format_bytes(free)} was free there, less llama.cpp's "
               f"{format_bytes(WEIGHTS_MARGIN)} margin for the KV cache and compute buffer")
    if keep < 1:
        return [{"title": f"Not one layer fits on {where}: use a smaller quantization, or run on the CPU",
                 "command": "", "effect": figures}]
    knob, command = ollama_fixes.set_option("num_gpu", keep, f"gpu{keep}", ollama, ex)
    return [{"title": f"Keep {keep} of the {layers} layers on {where}: {knob}",
             "command": command,
             "effect": f"{figures}: {keep} × {format_bytes(per_layer)} = {format_bytes(keep * per_layer)} fits; "
                       "the KV cache of the layers kept needs room too, so if the context then fails to allocate, "
                       "`runlocal diagnose` that log sizes it"}]
