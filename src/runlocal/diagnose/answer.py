"""The answer a diagnosis gives: the Diagnosis record, and how a knowledge-base entry matched on a line becomes one —
its title (an error that names no memory is titled with its own line), the entry's fixes for the log's runtime, and
ggml_vulkan's per-buffer cap read under a memory answer. Split from classify.py (session 18) at the edge between
choosing the entry (classify.Scanner) and saying it; behaviour unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import kb

APPLICATION_ERROR_ID = "notmem-application-error"
KILLED_AFTER_ERROR_ID = "notmem-killed-after-error"
VULKAN_CAP_ID = "notmem-vulkan-allocation-cap"  # ggml-vulkan.cpp ggml_vk_create_buffer's per-buffer cap
# answers titled with the error line itself ("Not a memory failure: <line>")
NAMES_THE_ERROR_IDS = frozenset({"notmem-other-error", APPLICATION_ERROR_ID, KILLED_AFTER_ERROR_ID})
APPLICATION_ERROR_TITLE_MAX = 160


@dataclass(frozen=True)
class Diagnosis:
    """What failed, why, what to do, and the figures the log states."""

    category: str
    entry: kb.Entry | None
    title: str
    cause: str
    fixes: tuple[dict[str, str], ...] = ()
    extracted: dict[str, Any] = field(default_factory=dict, hash=False)
    matched_line: str | None = None
    line_number: int | None = None
    runtime: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "title": self.title, "cause": self.cause,
                "fixes": [dict(f) for f in self.fixes], "extracted": dict(self.extracted)}


def names_the_error(line: str) -> str:
    """The answer for an error that names no memory: "Not a memory failure: " and the error line itself."""
    said = " ".join(line.split())
    if len(said) > APPLICATION_ERROR_TITLE_MAX:
        said = said[:APPLICATION_ERROR_TITLE_MAX - 1] + "…"
    return f"Not a memory failure: {said}"


def answer_for(entry: kb.Entry, line: str, line_no: int | None, figures: dict[str, Any],
            runtime: str | None) -> Diagnosis:
    """The diagnosis for ``entry``, matched on ``line``. A memory answer whose log carries ggml_vulkan's cap line
    (extract.py: one buffer above the driver's per-allocation limit, refused by ggml_vk_create_buffer before the
    driver is asked) is that cap, not the device's memory: VULKAN_CAP_ID's category, title and cause, with the
    failed buffer's entry's fixes (fixes.with_computed_fixes puts the cap's own first and drops those that read it
    as capacity)."""
    fixes = tuple(entry_fixes(entry, runtime))
    if _vulkan_cap_alone(entry, line, figures):
        entry = kb.get(VULKAN_CAP_ID) or entry
    title = (names_the_error(line) if entry.id in NAMES_THE_ERROR_IDS
             else ggml_allocation_title(line, figures) if entry.id == GGML_ALLOC_ID else entry.title)
    return Diagnosis(category=entry.category, entry=entry, title=title, cause=entry.cause, fixes=fixes,
                     extracted=figures, matched_line=line, line_number=line_no, runtime=runtime)


GGML_ALLOC_ID = "llamacpp-cuda-malloc"   # classify.GGML_OOM_ID: ggml's buffer allocation failure, any backend
# the buffer a ggml allocation failure names (its allocator's function, "failed to allocate X buffer", the device
# figure) → the call that failed. ggml-cuda.cu: a CUDA_Host buffer is ggml_cuda_host_malloc's cudaMallocHost (page-
# locked RAM); ggml-backend.cpp: a CPU buffer is ggml_aligned_malloc's (RAM); ggml-vulkan.cpp: vk::Device::allocateMemory;
# ggml-sycl: sycl::malloc_device (sycl::malloc_host for SYCL_Host); a ROCm build's cudaMalloc is hipMalloc
_BUFFER_NAMED = re.compile(r"gml_backend_(\w+?)_buffer_type_alloc_buffer|failed to allocate (\w+) buffer|"
                           r"unable to allocate (\w+) buffer|\b(ggml_vk|ggml_vulkan|errorout\w*devicememory)|"
                           r"\b(level_zero|ur_result_error|pi_error|native api)|\bggml_(aligned_malloc)")
# a backend's own words for its refusal: ggml-vulkan.cpp "ggml_vulkan: Device memory allocation of size N failed" and
# vulkan.hpp's vk::Result "ErrorOutOfDeviceMemory"; SYCL's Level Zero / PI result codes; ggml.c ggml_aligned_malloc's
# "insufficient memory" (the CPU buffer's RAM)
_ALIASES = {"ggml_vk": "vulkan", "ggml_vulkan": "vulkan", "level_zero": "sycl", "ur_result_error": "sycl",
            "pi_error": "sycl", "native api": "sycl", "aligned_malloc": "cpu"}
_DEVICE_CALL = (("cuda", "cudaMalloc"), ("rocm", "hipMalloc"), ("hip", "hipMalloc"), ("vk", "vkAllocateMemory"),
                ("vulkan", "vkAllocateMemory"), ("sycl", "sycl::malloc_device"), ("opencl", "clCreateBuffer"))
_PINNED_CALL = (("cuda", "cudaMallocHost"), ("rocm", "hipHostMalloc"), ("sycl", "sycl::malloc_host"),
                ("vulkan", "host-visible Vulkan memory"), ("vk", "host-visible Vulkan memory"))
_BUFFER_TITLE = "llama.cpp / ggml: {what} allocation failed ({why})"


def ggml_allocation_title(line: str, figures: dict[str, Any]) -> str:
    """llamacpp-cuda-malloc's title by the buffer the log names (its entry's own title says cudaMalloc, which a CPU
    or pinned-host buffer never calls: diagnose19b, left): the matched line's buffer, else the device figure."""
    low = line.lower()
    m = _BUFFER_NAMED.search(low)
    buffer = next((g for g in m.groups() if g), "") if m else str(figures.get("device") or "").lower()
    buffer = "vulkan" if buffer.startswith("erroroutof") else _ALIASES.get(buffer, buffer)
    if buffer.endswith("_host") or "pinned memory" in low:
        call = next((c for k, c in _PINNED_CALL if buffer.startswith(k)), "cudaMallocHost")
        return _BUFFER_TITLE.format(what="pinned host", why=f"page-locked RAM for the GPU, {call} out of memory")
    if buffer.startswith("cpu"):
        return _BUFFER_TITLE.format(what="host memory", why="a CPU buffer in RAM, malloc out of memory")
    call = next((c for k, c in _DEVICE_CALL if buffer.startswith(k)), "cudaMalloc" if "cuda" in low else "")
    # no buffer named (a title, a prose line): the allocation, not a device the log does not name
    return _BUFFER_TITLE.format(what="device" if call or "device" in low else "memory",
                                why=f"{call} out of memory".strip())


def _vulkan_cap_alone(entry: kb.Entry, line: str, figures: dict[str, Any]) -> bool:
    """Whether a memory answer is ggml_vulkan's per-allocation cap and nothing else: the log carries the cap line, the
    line answered is Vulkan's and no other backend's buffer failed in the same paste (a CUDA build tried after it), and
    the buffer refused
    is no larger than the memory the log says the device has free — a buffer above that is short of memory whatever
    the cap check threw first (review15d: 38 GiB on an 8 GiB RX 6600)."""
    if not figures.get("vk_allocation_cap_exceeded") or entry.category not in kb.MEMORY_CATEGORIES:
        return False
    low = line.lower()
    if "vulkan" not in low and "ggml_vk" not in low and "buffer size" not in low:
        return False
    device = str(figures.get("device") or "")     # the last buffer the log failed: another backend's is memory
    if device and not device.lower().startswith("vulkan"):
        return False
    size = figures.get("vk_failed_allocation_bytes") or figures.get("requested_bytes")
    room = figures.get("free_bytes") or figures.get("total_bytes")
    return not (size and room and size > room)


def entry_fixes(entry: kb.Entry, runtime: str | None) -> list[dict[str, str]]:
    """The entry's solutions as fixes, keeping those that apply to ``runtime`` (all if none apply)."""
    out = []
    for sol in entry.solutions:
        cmd = sol.command_for(runtime)
        if cmd is not None:
            out.append({"title": sol.title, "command": cmd, "effect": ""})
    if not out and runtime is not None:
        return entry_fixes(entry, None)
    return out
