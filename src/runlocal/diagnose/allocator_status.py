"""An out-of-memory line whose own figures say the card had room, under an allocator's earlier non-memory status.

PyTorch's OOM message states the card's free memory beside the size it tried to allocate
(c10/cuda/CUDACachingAllocator.cpp: "Tried to allocate X. GPU N has a total capacity of T of which F is free").
When F is at least half the card and a hundred times X, the card was not short of memory for that block. Free memory
that large can still come with a real refusal (a process cap: ROCm/TheRock#2118's "1.05 GiB allowed"; a ROCm
runtime's refusal, pytorch#175431, both labelled memory in rocm.jsonl), so the figures alone decide nothing. They
decide it beside an allocator's own earlier line that reports a CUDA status other than out of memory from an
allocator source file — vLLM's sleep-mode pool "CUDA Error: invalid argument at …/csrc/cumem_allocator.cpp:119"
(ms-swift#9613, round 46): the pool's mapping call failed with an argument error, and the OOM that followed is how
PyTorch relayed the failed allocation, not a full card. Read by the scanner (classify) when it settles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["FREE_SHARE_OF_CARD", "FREE_TIMES_REQUEST", "NON_OOM_ALLOCATOR_STATUS", "allocator_status_said",
           "figures_show_room"]

# "cuda error: <status> at <file>alloc…": a CUDA status printed by an allocator's source file, other than
# cudaErrorMemoryAllocation's "out of memory" (vLLM csrc/cumem_allocator.cpp's CUDA_CHECK prints
# "CUDA Error: %s at %s:%d" with cudaGetErrorString's text)
NON_OOM_ALLOCATOR_STATUS = re.compile(r"cuda error: (?!out of memory)[a-z][a-z ]+ at \S*alloc\S*\.(?:cpp|cu|cc):\d+")
FREE_SHARE_OF_CARD = 0.5  # free memory at least this share of the card's capacity …
FREE_TIMES_REQUEST = 100  # … and at least this many times the refused block


def allocator_status_said(lines: Iterable[str]) -> bool:
    """Whether any of the (lower-cased) lines is an allocator's non-memory CUDA status."""
    return any("cuda error:" in low and NON_OOM_ALLOCATOR_STATUS.search(low) for low in lines)


def figures_show_room(figures: dict[str, Any]) -> bool:
    """Whether an OOM line's own figures say the card had ample free memory for the refused block."""
    req, free, total = figures.get("requested_bytes"), figures.get("free_bytes"), figures.get("total_bytes")
    if not (req and free and total):
        return False
    return free >= FREE_SHARE_OF_CARD * total and free >= FREE_TIMES_REQUEST * req
