"""Ollama's own sizing, read from its offload line when nothing in the log failed by name.

Before it starts a runner, Ollama places the model's layers on the GPU while its free VRAM holds them (llm/memory.go,
EstimateGPULayers) and logs the result: ``msg=offload library=cuda layers.requested=-1 layers.model=35
layers.offload=0 memory.available="[3.2 GiB]" …`` (``msg="offload to cuda"`` in older releases). With the count left
to Ollama (``layers.requested=-1``), fewer layers placed than the model has is Ollama saying the rest did not fit:
they run from system RAM (ollama#10765: 0 of 35 layers, a maintainer summed 4.26 GiB needed for two layers against
3.2 GiB free; ollama#10739: 4 of 49 layers, ~59 GB left for a RAM with 59 GiB free). Not when the user set num_gpu
below the model's layers (they asked for the split), nor for ``offload to cpu`` / ``library=cpu`` (no GPU to fill).
When the runner then started ("llama runner started in N seconds", logged once the runner reports ready), the split
loaded and ran: a partial offload, slower than a full one, not a failure (``PARTIAL_OFFLOAD_RAN_ID``, not_memory;
review15c: a log asking "why so slow?" after Ollama placed some of the layers had been answered as a memory failure).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LAYERS_LEFT_OFF_ID", "PARTIAL_OFFLOAD_RAN_ID", "layers_left_off", "sizing_entry"]

LAYERS_LEFT_OFF_ID = "ollama-layers-left-off"
PARTIAL_OFFLOAD_RAN_ID = "notmem-ollama-partial-offload-ran"


def layers_left_off(figures: dict[str, Any]) -> bool:
    """Whether Ollama's offload line says it put fewer layers on a GPU than the model has, of its own choice."""
    model, placed = figures.get("ollama_layers_model"), figures.get("ollama_layers_offload")
    library = str(figures.get("ollama_offload_library") or "").lower()
    if model is None or placed is None or not library or library == "cpu":
        return False
    requested = figures.get("ollama_layers_requested")
    if requested is not None and 0 <= int(requested) < int(model):
        return False  # num_gpu set below the model's layers: the split was asked for
    return int(placed) < int(model)


def sizing_entry(figures: dict[str, Any]) -> str | None:
    """The entry for Ollama's offload line when nothing failed by name: the layers left off (the rest did not fit), or,
    when the runner started after that placement, the partial offload that loaded and ran; None if no layer was left
    off."""
    if not layers_left_off(figures):
        return None
    return PARTIAL_OFFLOAD_RAN_ID if figures.get("ollama_runner_started") else LAYERS_LEFT_OFF_ID
