"""Which weight bytes a token reads on each device of an allocation: every byte a device holds, but the input
embedding's table, of which a token reads one row (a tied table is read whole where the output layer runs on it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..runtimes.registry import engine
from .token_work import embedding_share

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec
    from ..runtimes.base import DeviceMemory

# the share of a mean layer's bytes under which a remainder beside the embedding is the estimate's error (matmul_bytes)
EMBED_ESTIMATE_ERROR = 0.1


@dataclass(frozen=True)
class WeightReads:
    """Which weight bytes a token reads on each device of an allocation."""
    used: tuple[DeviceMemory, ...]      # devices holding weights or KV
    total_weights: int
    embed: float                        # input-embedding bytes not read whole (one row a token)
    holder: DeviceMemory | None         # the device holding the input embedding
    n_layers: int = 1
    quant: str | None = None            # the weights' GGUF type, for each tensor's bytes (device_read_fractions)

    def matmul_bytes(self, d: DeviceMemory) -> float:
        if d is not self.holder:
            return float(d.weights)
        # what the holder keeps beside the table (layers -ngl left in RAM, --n-cpu-moe's experts, -ot's tensors) is
        # read: only a remainder under a tenth of a mean layer is the embedding estimate's error (at most 5 % of a
        # layer over the catalog with every layer on a GPU: qwen3-30b-a3b Q4_K_M). Was 2 % of all the weights, which
        # is more than one layer of a 48-layer model: gemma-3-12b -ngl 48's block 0 (0.14 GB) was read as nothing.
        rest = d.weights - self.embed
        layer = (self.total_weights - self.embed) / max(1, self.n_layers)
        return rest if rest > EMBED_ESTIMATE_ERROR * layer else 0.0


def weight_reads(model: ModelSpec, alloc, quant: str | None = None) -> WeightReads:
    s = alloc.settings
    used = tuple(d for d in alloc.devices if d.weights or d.kv_cache)
    total_w = sum(d.weights for d in used) or 1
    # the input embedding is read one row a token: take it out of the device holding it (RAM under llama.cpp
    # when a CPU part exists) and apply the read fraction of the other tensors to the rest
    share = embedding_share(model, quant)
    holder = next((d for d in used if d.kind == "cpu" and d.weights), None) or next((d for d in used if d.weights), None)
    tied_in_ram = model.tie_word_embeddings and holder is not None and holder.kind == "cpu"
    gpu_weights = any(d.kind != "cpu" and d.weights for d in used)
    # llama.cpp: the output layer (il = n_layer) is the first one -ngl offloads (src/llama-model.cpp load_tensors:
    # i_gpu_start = max(n_layer + 1 - ngl, 0)), so only a plan with no weights on a GPU (-ngl 0, Ollama's CPU-only
    # runner, a --cpu plan: one rule for every runtime) leaves a tied head in RAM: the table, read whole a token.
    # With it on a GPU, its copy of token_embd there (TENSOR_DUPLICATED: llamacpp_layout._add_tied_copy) is in
    # total_w, which is then the file's bytes + the embedding's: the embedding is its share of the file's
    dup = tied_in_ram and engine(s.runtime).ggml and gpu_weights
    embed = 0.0 if tied_in_ram and not gpu_weights else total_w * share / (1 + share * dup)
    return WeightReads(used, total_w, embed, holder, model.n_layers, quant)


def device_read_fractions(model: ModelSpec, alloc, quant: str | None) -> dict[int, float]:
    """A llama-server launch of a mixture-of-experts model with weights in RAM: each device's share of its own
    non-embedding bytes a token reads (allocation index → share), each tensor by its llama-quantize bytes on the
    device llama.cpp gives it (runtimes/llamacpp_placed: -ngl's layers, --n-cpu-moe / --cpu-moe / -ot's experts on
    the host, the output layer, a tied table's GPU copy read whole). A routed expert is read n_active / n_experts, the
    rest whole (token_work._share): with the experts in RAM the host reads k/E of its bytes and the GPU all of its
    attention, where the model's mean share on both put the GPU's reads in RAM (qwen3-30b-a3b --cpu-moe on a 4070:
    1.78 GB a token read from RAM, 1.10 by hand). Empty elsewhere: the model's mean share then (every device of a
    dense model reads all of its bytes, and a plan without weights in RAM keeps the figure the fit was made on)."""
    from ..runtimes.base import Target
    from ..runtimes.llamacpp_layout import TOWER_ROLES, _weight_layer
    from ..runtimes.llamacpp_placed import placed_layers
    from .token_work import _gguf_typed, _share

    s = alloc.settings
    if not model.n_experts or not engine(s.runtime).gpu_layers_flag or s.tp > 1:
        return {}
    gpus = [i for i, d in enumerate(alloc.devices) if d.kind != "cpu"]
    host = next((i for i, d in enumerate(alloc.devices) if d.kind == "cpu"), None)
    placed = placed_layers(model.n_layers, model.n_experts, s,
                           [Target(alloc.devices[i].name, "gpu", alloc.devices[i].capacity) for i in gpus])
    view = _gguf_typed(model, quant) or model
    n = model.n_layers
    held: dict[int | None, list[float]] = {}        # GPU place (None: host) → [bytes, bytes a token reads]

    def add(dev: int | None, size: float, share: float) -> None:
        acc = held.setdefault(dev, [0.0, 0.0])
        acc[0] += size
        acc[1] += size * share

    for t in view.tensors:
        if t.role in TOWER_ROLES:
            continue
        size = float(t.nbytes or t.numel)
        if t.role == "embed":       # its RAM copy: one row (WeightReads.embed); a tied head reads a table whole
            if model.tie_word_embeddings:
                add(placed.where[-1], size, 1.0)
            continue
        il = _weight_layer(t, n)
        dev = None if il < 0 else placed.where[il]
        if t.role.startswith("expert_") and il in placed.experts_on_host:
            dev = None
        add(dev, size, _share(model, t))
    index: dict[int | None, int | None] = {**dict(enumerate(gpus)), None: host}
    out: dict[int, float] = {}
    for dev, (size, read) in held.items():
        at = index.get(dev)
        if size and at is not None:
            out[at] = read / size
    return out
