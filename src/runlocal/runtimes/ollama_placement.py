"""Which GPUs Ollama hands llama-server on a machine with several (v0.30.0 on, the llama-server era).

ollama/ollama server/sched.go selectLlamaServerPlacement (read at v0.30.0, v0.30.5, v0.31.0, v0.32.0, v0.32.10 and
v0.33.0-rc2 fb30760; the same in each), with num_gpu and main_gpu unset:

* predicted = llm/llama_server.go PredictServerVRAM: the model file's size + an f16 KV estimate (2 × blocks × the
  smallest KV head count × embedding / heads × num_ctx × num_parallel × 2 B) — ollama.predicted_vram;
* unless OLLAMA_SCHED_SPREAD is set, bestSingleGPUFit takes the GPUs whose free memory holds it within 80 %
  (``predictedVRAM > candidateAvailable*80/100`` → skipped) and picks the best of them (betterPlacementGPU: a discrete
  GPU before an integrated one, then the most free memory; the first of equals): llama-server gets that GPU alone
  (singleLlamaServerGPUPlacement: ``--split-mode none --main-gpu 0``, llm/llama_server.go appendMainGPUArgs);
* otherwise every GPU of the library group with the most free memory (bestGPUGroupByAvailableMemory; one group here:
  the GPUs of one plan share a vendor) goes to llama-server, which places the layers itself: ``-ngl`` is not passed
  (llm/llama_server.go startLlamaServer "let llama-server auto-detect"), so llama.cpp's --fit spreads them over the
  GPUs (common/fit.cpp: back to front, each GPU keeping its 1024 MiB margin; runtimes/llamacpp_fit_devices.py).

The automatic batch is then chosen against the free memory of the GPUs placed on (availableMemoryForPlacement).
Before v0.30.0 Ollama's own runner split the layers: v0.7.1 – v0.11.4 by llm/memory.go EstimateGPULayers
(runtimes/ollama_estimate.py: its GPUs, --n-gpu-layers and --tensor-split); v0.11.5 – v0.29 by the ml backend's
measured layouts — not modelled: planned as llama-server over every GPU (the layers split by free memory). Pure
computation: no I/O.
"""

from __future__ import annotations

from .base import Target

SINGLE_GPU_PERCENT = 80     # server/sched.go bestSingleGPUFit: predictedVRAM > candidateAvailable*80/100 → skipped


def _better(candidate: Target, current: Target) -> bool:
    """server/sched.go betterPlacementGPU: a discrete GPU before an integrated one, then more free memory."""
    if (candidate.kind == "unified") != (current.kind == "unified"):
        return candidate.kind != "unified"
    return candidate.capacity > current.capacity


def llama_server_gpus(gpus: list[Target], predicted: int, spread: bool) -> tuple[list[Target], str]:
    """(the GPUs llama-server is given, why) by selectLlamaServerPlacement; one GPU or none: as given."""
    if len(gpus) <= 1:
        return gpus, ""
    if not spread and predicted > 0:
        best: Target | None = None
        for g in gpus:
            if predicted > g.capacity * SINGLE_GPU_PERCENT // 100:
                continue
            if best is None or _better(g, best):
                best = g
        if best is not None:
            return [best], (f"predicted {predicted / 2**30:.2f} GiB (file + f16 KV) ≤ {SINGLE_GPU_PERCENT} % of "
                            f"{best.name}'s {best.capacity / 2**30:.2f} GiB free: that GPU alone (--split-mode none "
                            "--main-gpu 0), the others idle")
    why = ("OLLAMA_SCHED_SPREAD=1: every GPU" if spread else
           f"predicted {predicted / 2**30:.2f} GiB (file + f16 KV) > {SINGLE_GPU_PERCENT} % of every GPU's free "
           "memory: every GPU")
    return gpus, why + " to llama-server, -ngl unset: --fit spreads the layers over them"


__all__ = ["SINGLE_GPU_PERCENT", "llama_server_gpus"]
