"""A runner that died on a CUDA call whose message was not pasted, on a card the writer says is smaller than the
model they name (round 40's ollama#5504, session 14).

ggml's CUDA backend checks every CUDA call (ggml-cuda/common.cuh CUDA_CHECK): on a failure it prints
"CUDA error: <the call's error string>", the device and function, then aborts with the bare words "CUDA error"
(GGML_ABORT). On Windows an abort exits with 0xc0000409, and Ollama's runner error carries the last line the runner
printed, so "llama runner process has terminated: exit status 0xc0000409 CUDA error" says a CUDA call failed and
drops which one. Which call it was decides everything (out of memory, an illegal access, a missing kernel image …);
when the paste says nothing more, the writer's own figures can: a card whose memory, as they state it, is below the
named model's weights at 4.5 bits a weight (ggml's Q4_0: an fp16 scale and 16 bytes for each block of 32 weights,
ggml-common.h block_q4_0; the smallest default quantisation of Ollama's library) cannot hold that model, so the
runner splits it by an estimate, and a CUDA call failing there is the card's memory (ollama-runner-cuda-oom). The
figures decide, not the words: the same exit on a card that holds the model, a paste with the CUDA message, or a paste
that names no card or no model stays as before (not memory).

The same figures answer a second question (round 42's omlx#862, session 15): a macOS kernel panic in the GPU driver's
memory bookkeeping, "completeMemory() prepare count underflow" @IOGPUMemory.cpp, is a reference count going below
zero — a driver bug that the maintainers of MLX servers see under heavy allocation churn (jundot/omlx#978) and that
comes under unified-memory pressure (exo-explore/exo#1972: "Core 93% wired", an ~45.6 GB model on a 48 GB Mac). The
corpus reads it as Metal running out of memory when nothing says otherwise. When the writer names the Mac's memory and a
model with its size in billions and its bits, and those weights fit in macOS's default GPU working set for that
memory (hardware.unified_memory.apple_default_working_set; MLX's affine quantisation adds an fp16 scale and bias per
group of 64 weights, 0.5 bit a weight: mlx.core.quantize), nothing was short: the panic is the driver's bookkeeping
(``mac_holds_model``). The figures decide: a model above the working set, or a paste without all three figures, stays
as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..hardware.unified_memory import apple_default_working_set
from ..verdict import TIGHT_SHARE

Q4_0_BYTES_PER_WEIGHT = 18 / 32  # ggml-common.h: block_q4_0 = ggml_half d + uint8_t qs[16], 32 weights
GIB = 1024 ** 3

# the runner's exit ending with ggml's abort words and nothing after them (quotes and underscores of the paste aside)
_ABORT_ENDS_LINE = re.compile(r"exit (?:status|code)\W*\w+\W+cuda error[\W_]*$")
# ... a CUDA error with its message: "CUDA error: out of memory", "CUDA error 35 at …", "CUDA error = 700"
CUDA_MESSAGE = re.compile(r"cuda error\s*(?:[:=(]\s*\w|\d)")
# the card's memory as the writer states it: "4GB VRAM", "(4 GB of VRAM)", "VRAM: 6 GB", "8 GB GPU memory"
_VRAM_SAID = re.compile(r"\b(\d+(?:\.\d+)?)\s*gi?b\s*(?:of\s+)?(?:vram|video memory|gpu memory)\b"
                        r"|\b(?:vram|gpu memory)\s*(?:of|:|=)?\s*(\d+(?:\.\d+)?)\s*gi?b\b")
# a model named by its size in billions ("Llama3 8B", "qwen2.5:7b", "llama-2-13b")
_BILLIONS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)b\b")
# a Mac named on the line ("mac mini m4", "MacBook Pro", "Mac Studio", "M3 Ultra") and its memory on the same line
# ("16g", "16GB", "96 GB unified memory"); a figure said to be a file, a model or VRAM is not the Mac's memory
_MAC = re.compile(r"\bmac(?:book|mini|studio)?\b|\bimac\b|\bm[1-5](?: pro| max| ultra)?\b")
_MAC_RAM = re.compile(r"(?<![\w.])(\d{1,3})\s?g(?:b|ib)?\b(?!\s*(?:vram|model|file|weights|download|disk))")
# the bits a weight of the named model ("MLX-…-6bit", "4-bit", "8 bit")
_BITS = re.compile(r"(?<![\w.])(\d{1,2})[-_ ]?bits?\b")
MLX_GROUP_OVERHEAD_BITS = 0.5  # mlx.core.quantize: an fp16 scale and an fp16 bias per group of 64 weights
# the panic in the GPU driver's memory bookkeeping (IOGPUMemory.cpp's completeMemory): a count below zero
_REFCOUNT_PANIC = re.compile(r"prepare count underflow")


def cuda_abort_ends_exit(low: str) -> bool:
    """Whether the line is a runner's exit whose last words are ggml's bare "CUDA error" abort."""
    return "cuda error" in low and _ABORT_ENDS_LINE.search(low) is not None


def vram_said_gib(low: str) -> float | None:
    """The card's memory in GiB as the line states it (cards are sold in binary gigabytes), or None."""
    m = _VRAM_SAID.search(low) if ("vram" in low or "gpu memory" in low or "video memory" in low) else None
    return None if m is None else float(m.group(1) or m.group(2))


def billions_named(low: str) -> list[float]:
    """The model sizes in billions of parameters the line names."""
    return [float(b) for b in _BILLIONS.findall(low)] if "b" in low else []


def card_below_model(vram_gib: float | None, billions: list[float]) -> bool:
    """Whether even the smallest model named needs more than the card at 4.5 bits a weight."""
    return vram_gib is not None and bool(billions) and \
        min(billions) * 1e9 * Q4_0_BYTES_PER_WEIGHT > vram_gib * GIB


@dataclass
class WriterFigures:
    """What the writer states near the top of a paste: the card's memory, the smallest and the largest model named
    (billions), the Mac's memory and the bits a weight of the model."""

    vram_gib: float | None = None
    fewest_billions: float | None = None
    most_billions: float | None = None
    mac_ram_gib: float | None = None
    bits: float | None = None

    def read(self, low: str) -> None:
        if self.vram_gib is None:
            self.vram_gib = vram_said_gib(low)
        if named := billions_named(low):
            self.fewest_billions = min(named + [self.fewest_billions or named[0]])
            self.most_billions = max(named + [self.most_billions or named[0]])
        if self.mac_ram_gib is None and "g" in low and _MAC.search(low) and (m := _MAC_RAM.search(low)):
            self.mac_ram_gib = float(m.group(1))
        if self.bits is None and "bit" in low and (b := _BITS.search(low)):
            self.bits = float(b.group(1))

    def card_below_model(self) -> bool:
        return card_below_model(self.vram_gib, [self.fewest_billions] if self.fewest_billions else [])

    def mac_holds_model(self) -> bool:
        """Whether the largest model named (a draft or embedding model beside it does not make it smaller), at its
        bits (with MLX's group overhead below 16 bits), leaves room in the default GPU working set of the Mac's memory
        as stated: at most verdict.TIGHT_SHARE of it, the share a plan calls "fits" (its KV cache and activations need the rest).
        Calling a memory failure "not memory" is the costlier mistake, so the room is required, not assumed."""
        if self.mac_ram_gib is None or self.most_billions is None or self.bits is None:
            return False
        bits = self.bits + (MLX_GROUP_OVERHEAD_BITS if self.bits < 16 else 0)
        weights = self.most_billions * 1e9 * bits / 8
        return weights <= TIGHT_SHARE * apple_default_working_set(int(self.mac_ram_gib * GIB))


def refcount_panic(low: str) -> bool:
    """Whether the line is macOS's panic in IOGPUMemory's bookkeeping ("completeMemory() prepare count underflow")."""
    return "underflow" in low and _REFCOUNT_PANIC.search(low) is not None
