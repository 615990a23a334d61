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

from ..memo import IdMemo
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
    lc = s.llamacpp
    host = (tuple(il for il in range(n_layers) if _experts_device(il, where[il], lc.n_cpu_moe, lc.override_tensor) is None)
            if n_experts else ())
    return Placed(where, host)


def _experts_device(il: int, device: int | None, cpu_moe: int, rules: tuple[tuple[str, str], ...]) -> int | None:
    """Where block ``il``'s routed experts go from a block on ``device``: --n-cpu-moe's first blocks to the host, then
    the first -ot rule matching its ffn_up_exps (llama-model-loader.cpp: the first matching override wins)."""
    if il < cpu_moe:
        device = None
    for pattern, buft in rules:
        if re.search(pattern, f"blk.{il}.ffn_up_exps.weight"):
            return buffer_device(buft)
    return device


def weights_step(model, weights, where: tuple[int | None, ...], s: Settings, buffers) -> Step:
    """The weights step: the layers on the GPUs, each GPU's blocks, the experts the host holds and the other tensors
    an -ot rule sends elsewhere, and each device's bytes (src/llama-model.cpp load_tensors)."""
    placed = placed_from(where, model.n_experts, s)
    n_gpus = sum(1 for d in buffers if d.kind != "cpu")
    on_gpu = sum(1 for w in where[:-1] if w is not None)
    split = f" ({placed.split_words(n_gpus)})" if n_gpus else ""
    rules = override_words(model, weights, s)
    return Step("weights", f"{on_gpu}/{model.n_layers} layers on GPU{' + output' if where[-1] is not None else ''}"
                f"{split}; {''.join(f'{w}; ' for w in rules)}{_embedding_words(model, where, placed, buffers, rules)}",
                ", ".join(f"{d.name} {d.model:,} B" for d in buffers),
                "src/llama-model.cpp load_tensors (tok_embd: LLM_TENSOR_LAYER_INPUT, always in host memory)"
                # the loader's line where a rule moves tensors: -ot, or --n-cpu-moe (common/arg.cpp writes it as -ot)
                + ("; src/llama-model-loader.cpp: an -ot rule's tensor logs \"buffer type overridden to\""
                   if s.llamacpp.override_tensor or s.llamacpp.n_cpu_moe else ""))


def override_words(model, weights, s: Settings) -> list[str]:
    """Each -ot rule's tensors, as src/llama-model-loader.cpp matches them (std::regex_search on the GGUF name, the
    first matching rule wins; each logs "tensor … buffer type overridden to …"): count, kinds, blocks, bytes and the
    device (GPU i as the split counts them). A routed expert sent to the host is left out: the split's "routed
    experts of N layers" says it. Kept per model and rules (--fit's multi-GPU search asks again for each probe's)."""
    rules = s.llamacpp.override_tensor
    if not rules or not model.tensors:
        return []
    cpu_moe = s.llamacpp.n_cpu_moe
    key = (weights.quant, weights.total, weights.from_file, rules, cpu_moe)
    return _WORDS.get(model, key, lambda: _override_words_now(model, weights, rules, cpu_moe))


_WORDS = IdMemo(512)
_NAMED = IdMemo(64)
_MATCHED = IdMemo(1024)


def _named_bytes(model, weights) -> tuple[tuple[str, int], ...]:
    """Each GGUF tensor's name and bytes (a checkpoint's per-expert tensors summed into the merged one they become:
    one GGUF tensor, one "overridden" log line), in file order (the same names, in the same order, for any weights)."""
    from ..quant.gguf_mix import gguf_names
    from .llamacpp_layout import sizer

    def make() -> tuple[tuple[str, int], ...]:
        size_of, named = sizer(model, weights), dict[str, int]()
        for t, names in zip(model.tensors, gguf_names(model)):
            for name in names:
                named[name] = named.get(name, 0) + size_of(t) // len(names)
        return tuple(named.items())
    return _NAMED.get(model, (weights.quant, weights.total, weights.from_file), make)


def _matched(model, named: tuple[tuple[str, int], ...], pattern: str) -> frozenset[int]:
    """The GGUF tensors (their places in ``named``) a pattern's std::regex_search finds; per pattern, since --fit's
    multi-GPU probes repeat them (52 patterns in 285 rules for qwen3-235b-a22b on 4 × RTX 3090). The pattern "" holds
    the routed experts (--n-cpu-moe's regex), which the split's words say where the host holds them."""
    from .llamacpp_layout import moved_by_cpu_moe

    def make() -> frozenset[int]:
        if not pattern:
            return frozenset(i for i, (n, _) in enumerate(named) if moved_by_cpu_moe((n,)))
        rx = re.compile(pattern)
        return frozenset(i for i, (n, _) in enumerate(named) if rx.search(n))
    return _MATCHED.get(model, pattern, make)


def _experts_said(model, named: tuple[tuple[str, int], ...], rules: tuple[tuple[str, str], ...],
                  cpu_moe: int) -> frozenset[int]:
    r"""The routed experts the split's words already say are on the host: those of the blocks placed_from counts as
    experts-on-host (the block's ffn_up_exps sent there by --n-cpu-moe or the first matching -ot rule). A block of
    which a rule moves only the gate and down experts (--fit's partial-layer rules, blk\.19\.ffn_(gate|gate_up|down)
    .*=CPU) is not one, so its words name them (review20b finding 10)."""
    host = {il for il in range(model.n_layers) if _experts_device(il, 0, cpu_moe, rules) is None}
    return frozenset(i for i in _matched(model, named, "")
                     if (m := _BLOCK_NAME.match(named[i][0])) and int(m.group(1)) in host)


def _override_words_now(model, weights, rules: tuple[tuple[str, str], ...], cpu_moe: int = 0) -> list[str]:
    named = _named_bytes(model, weights)
    experts = _experts_said(model, named, rules, cpu_moe) if model.n_experts else frozenset()
    claimed: set[int] = set()
    out = []
    for pattern, buft in rules:
        dev = buffer_device(buft)
        hits = _matched(model, named, pattern) - claimed      # the first matching rule wins
        claimed |= hits
        shown = sorted(hits - experts if dev is None else hits)
        if shown:
            out.append(f"-ot {pattern}={buft}: {len(shown)} tensor{'s' if len(shown) != 1 else ''}, "
                       f"{_tensor_kinds([named[i][0] for i in shown])}, on {'CPU RAM' if dev is None else f'GPU {dev}'}: "
                       f"{sum(named[i][1] for i in shown):,} B")
    return out


_BLOCK_NAME = re.compile(r"blk\.(\d+)\.(.+?)(?:\.weight|\.bias)?$")


def _tensor_kinds(names: list[str]) -> str:
    """"ffn_down, ffn_gate, ffn_up (blocks 10–19)" from GGUF names; a tensor outside the blocks by its own name."""
    kinds, blocks, other = set(), set(), []
    for name in names:
        m = _BLOCK_NAME.match(name)
        if m:
            blocks.add(int(m.group(1)))
            kinds.add(m.group(2))
        else:
            other.append(name)
    span = f" (block {next(iter(blocks))})" if len(blocks) == 1 else _span(sorted(blocks))
    parts = [f"{', '.join(sorted(kinds))}{span}"] if blocks else []
    return "; ".join([*parts, *other])


def _embedding_words(model, where: tuple[int | None, ...], placed: Placed, buffers, rules: list[str]) -> str:
    """The token embedding llama.cpp keeps in host memory (its input layer's buffer type is the CPU's whatever -ngl):
    its shape, and its bytes where it is all the host holds (every layer and the output on a GPU, no experts, no
    tensor an -ot rule moved)."""
    embed = next((t for t in model.tensors if t.role == "embed"), None) if model.tensors else None
    shape = f" ({' × '.join(f'{n:,}' for n in embed.shape)})" if embed is not None else ""
    host = next((d for d in buffers if d.kind == "cpu"), None)
    if host is None or any(w is None for w in where) or placed.experts_on_host or rules:
        return f"token embedding{shape} in CPU RAM"
    return f"token embedding{shape} in CPU RAM: {host.model:,} B, all the CPU holds"
