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
"""

from __future__ import annotations

import re

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
