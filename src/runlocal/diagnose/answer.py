"""The answer a diagnosis gives: the Diagnosis record, and how a knowledge-base entry matched on a line becomes one —
its title (an error that names no memory is titled with its own line), the entry's fixes for the log's runtime, and
ggml_vulkan's per-buffer cap read under a memory answer. Split from classify.py (session 18) at the edge between
choosing the entry (classify.Scanner) and saying it; behaviour unchanged.
"""

from __future__ import annotations

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
    title = names_the_error(line) if entry.id in NAMES_THE_ERROR_IDS else entry.title
    return Diagnosis(category=entry.category, entry=entry, title=title, cause=entry.cause, fixes=fixes,
                     extracted=figures, matched_line=line, line_number=line_no, runtime=runtime)


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
