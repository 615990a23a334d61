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
    return WeightReads(used, total_w, embed, holder, model.n_layers)
