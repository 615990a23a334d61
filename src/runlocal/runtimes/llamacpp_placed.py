"""Where one llama-server launch puts each repeating layer, said per device in the words a user checks against
-ngl, --tensor-split, --n-cpu-moe and -ot: the weights step's split and the decode formula's (review19 #8, #9).

Pure: the layer rule is llamacpp_layout.layer_devices (src/llama-model.cpp load_tensors: i_gpu_start =
max(n_layer + 1 − ngl, 0), each layer to the first GPU whose cumulative --tensor-split share exceeds its place);
--n-cpu-moe N keeps the routed experts of the first N layers on the CPU (common/arg.cpp, PR #15077); an -ot rule
sends a tensor whose GGUF name it matches first (src/llama-model-loader.cpp: std::regex_search) to its buffer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .base import Settings, Step, Target
from .llamacpp_layout import buffer_device, layer_devices_kept


def layer_shares(s: Settings, gpus: list[Target]) -> list[float]:
    """--tensor-split's shares, zero-filled to the GPUs given; unset, each GPU's free memory (llama.cpp's default)."""
    split = s.llamacpp.tensor_split
    return [*split, *[0.0] * (len(gpus) - len(split))] if split else [float(max(g.capacity, 1)) for g in gpus]


@dataclass(frozen=True)
class Placed:
    """The repeating layers of each device (GPUs by their place in the launch, then the host), the output layer's
    device, and the layers whose routed experts the host holds."""

    where: tuple[int | None, ...]       # each repeating layer's GPU (None: the host), then the output layer's
    experts_on_host: tuple[int, ...]    # blocks whose ffn_*_exps the host holds (--n-cpu-moe, -ot …=CPU)

    def layers_on(self, gpu: int | None) -> list[int]:
        return [il for il, w in enumerate(self.where[:-1]) if w == gpu]

    def words(self, gpu: int | None) -> str:
        """"40 layers (blocks 0–39) + output", "0 layers"; a host holding experts: "experts of 25 layers (0–24)"."""
        blocks = self.layers_on(gpu)
        parts = [f"{len(blocks)} layer{'s' if len(blocks) != 1 else ''}{_span(blocks)}"] if blocks else []
        if self.where[-1] == gpu:
            parts.append("output")
        if gpu is None and (moved := [il for il in self.experts_on_host if il not in blocks]):
            parts.append(f"the routed experts of {len(moved)} layer{'s' if len(moved) != 1 else ''}{_span(moved)}")
        return " + ".join(parts) or "0 layers"

    def split_words(self, n_gpus: int) -> str:
        """Every GPU's layers, then the host's where it holds any: "GPU 0: 40 layers (blocks 0–39); GPU 1: …"."""
        parts = [f"GPU {i}: {self.words(i)}" for i in range(n_gpus)]
        if self.layers_on(None) or self.experts_on_host or self.where[-1] is None:
            parts.append(f"CPU: {self.words(None)}")
        return "; ".join(parts)


def _span(blocks: list[int]) -> str:
    if not blocks:
        return ""
    runs, start = [], 0
    for i, il in enumerate(blocks):
        if i + 1 == len(blocks) or blocks[i + 1] != il + 1:
            runs.append(f"{blocks[start]}–{il}" if il != blocks[start] else f"{il}")
            start = i + 1
    return f" (blocks {', '.join(runs)})"


def placed_layers(n_layers: int, n_experts: int, s: Settings, gpus: list[Target]) -> Placed:
    """The launch's layers by device, from its settings after --fit (-ngl, -ts, --n-cpu-moe, -ot as it runs)."""
    ngl = (s.llamacpp.n_gpu_layers or 0) if gpus else 0
    return placed_from(layer_devices_kept(n_layers, ngl, tuple(layer_shares(s, gpus))), n_experts, s)


def placed_from(where: tuple[int | None, ...], n_experts: int, s: Settings) -> Placed:
    """Placed for a launch whose layers' devices are known (llamacpp_layout.Budget.where)."""
    n_layers = len(where) - 1
    host: list[int] = []
    if n_experts:
        for il in range(n_layers):
            device = where[il]
            if il < s.llamacpp.n_cpu_moe:
                device = None
            for pattern, buft in s.llamacpp.override_tensor:
                if re.search(pattern, f"blk.{il}.ffn_up_exps.weight"):
                    device = buffer_device(buft)
                    break
            if device is None:
                host.append(il)
    return Placed(where, tuple(host))


def weights_step(model, where: tuple[int | None, ...], s: Settings, buffers) -> Step:
    """The weights step: the layers on the GPUs, each GPU's blocks and the experts the host holds, and each device's
    bytes (src/llama-model.cpp load_tensors)."""
    placed = placed_from(where, model.n_experts, s)
    n_gpus = sum(1 for d in buffers if d.kind != "cpu")
    on_gpu = sum(1 for w in where[:-1] if w is not None)
    split = f" ({placed.split_words(n_gpus)})" if n_gpus else ""
    return Step("weights", f"{on_gpu}/{model.n_layers} layers on GPU{' + output' if where[-1] is not None else ''}"
                f"{split}; {_embedding_words(model, where, placed, buffers)}",
                ", ".join(f"{d.name} {d.model:,} B" for d in buffers),
                "src/llama-model.cpp load_tensors (tok_embd: LLM_TENSOR_LAYER_INPUT, always in host memory)")


def _embedding_words(model, where: tuple[int | None, ...], placed: Placed, buffers) -> str:
    """The token embedding llama.cpp keeps in host memory (its input layer's buffer type is the CPU's whatever -ngl):
    its shape, and its bytes where it is all the host holds (every layer and the output on a GPU, no experts)."""
    embed = next((t for t in model.tensors if t.role == "embed"), None) if model.tensors else None
    shape = f" ({' × '.join(f'{n:,}' for n in embed.shape)})" if embed is not None else ""
    host = next((d for d in buffers if d.kind == "cpu"), None)
    if host is None or any(w is None for w in where) or placed.experts_on_host:
        return f"token embedding{shape} in CPU RAM"
    return f"token embedding{shape} in CPU RAM: {host.model:,} B, all the CPU holds"
