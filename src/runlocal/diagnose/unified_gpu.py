"""vLLM's start-up refusal on an NVIDIA unified-memory device (review22 finding 2): the memory not free is the OS's.

vLLM stops when the memory free is below --gpu-memory-utilization × CUDA's total ("Free memory on device cuda:0
(102.2/121.69 GiB) on startup is less than desired GPU memory utilization (0.87, 105.87 GiB)", vllm/v1/worker/utils.py
request_memory). On a DGX Spark (GB10) or a Jetson the total is the RAM Linux sees (devices.json cuda_total_gib, e.g.
121.69 GiB on a GB10): what is not free there is held by the OS and its page cache, which MiaAI-Lab/GLM-5.3-Flash-EXL3-
2x-DGX-Sparks#47 found at the same floor headless, after dropping caches, on two driver branches. nvidia-smi shows no
memory use on these systems ("Memory-Usage: Not Supported", NVIDIA's DGX Spark known issues, devices.json
dgx-spark-memory) and there is one GPU, so the knowledge base's "another process" fixes (nvidia-smi, a second GPU
through CUDA_VISIBLE_DEVICES) do not apply; the lower fraction computed from the log's own figures does. The cause is
worded for the device the total names (review22b #9): the GB10's floor and the nvidia-smi note for the Spark only, a
small Jetson only where the paste names one, and the family where several modules share that memory.
"""

from __future__ import annotations

from typing import Any

from ..units import GiB

_NOT_HERE = ("nvidia-smi", "CUDA_VISIBLE_DEVICES")


# a Jetson whose memory is at most this many GiB is named from the log's total only where the paste names a Jetson:
# discrete cards of 8 to 16 GB report totals in the same range (review22b #9: a bare 7.43 GiB was named a Jetson; the
# same "7.43 GiB total capacity" is in a 2019 fast.ai lesson-3 OOM, years before any Orin: Laura Langdon, "10,000 Ways
# That Won't Work", 2019-09-27)
SMALL_JETSON_GIB = 16
# the GB10's floor: MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47, free 101.3–102.2 of 121.69 GiB on fresh headless
# boots, after dropping caches, on two driver branches
GB10_FREE_GIB = (101.3, 102.2)


def unified_device(ex: dict[str, Any]):
    """The catalog's NVIDIA unified-memory device whose CUDA total the log's total is, at the log's two decimals; a
    Jetson of SMALL_JETSON_GIB or less only where the paste names a Jetson (extract's jetson_named)."""
    total = ex.get("total_bytes")
    if not total:
        return None
    from ..hardware.catalog import load_devices

    logged = round(total / GiB, 2)
    return next((d for d in load_devices() if d.unified_memory and d.vendor == "nvidia" and d.cuda_total_bytes
                 and round(d.cuda_total_bytes / GiB, 2) == logged
                 and (d.family != "jetson-orin" and d.family != "jetson-thor" or d.memory_gib > SMALL_JETSON_GIB
                      or ex.get("jetson_named"))), None)


def device_words(dev) -> str:
    """The device as the total tells it: its name where no other catalog device of its family has its memory (the
    measured total is one module's, and modules of one family and size share the RAM and the Jetson Linux that sets
    it), else the family and the memory ("a Jetson Orin with 8 GB": the Orin Nano Super, the original Orin Nano and
    the Orin NX 8GB)."""
    from ..hardware.catalog import load_devices

    kin = [d for d in load_devices() if d.family == dev.family and d.memory_gib == dev.memory_gib]
    if len(kin) <= 1:
        return str(dev.name)
    family = " ".join(w.capitalize() for w in str(dev.family).split("-"))
    return f"a {family} with {dev.memory_gib:g} GB"


def on_unified_device(doc: dict[str, Any]) -> dict[str, Any]:
    """A vllm_gpu_util answer whose total is a unified device's: the cause said for that device, and the fixes that
    look for another process or another GPU dropped. Any other answer unchanged."""
    ex = doc.get("extracted") or {}
    dev = unified_device(ex) if doc.get("category") == "vllm_gpu_util" else None
    if dev is None:
        return doc
    held = (ex["total_bytes"] - ex["free_bytes"]) / GiB if ex.get("free_bytes") else None
    floor = ""
    if dev.id == "dgx-spark":   # measured on the GB10 only; no Jetson's floor is published
        total = dev.cuda_total_bytes / GiB
        floor = (f"On a fresh headless boot the OS alone keeps {total - GB10_FREE_GIB[1]:.1f}–"
                 f"{total - GB10_FREE_GIB[0]:.1f} GiB of a GB10's {total:.2f} (MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-"
                 f"Sparks#47: free {GB10_FREE_GIB[0]}–{GB10_FREE_GIB[1]} GiB). ")
    doc["cause"] = (f"The total, {ex['total_bytes'] / GiB:.2f} GiB, is CUDA's on {device_words(dev)}, whose GPU shares "
                    "the machine's RAM: " + (f"the {held:.2f} GiB not free " if held is not None else "what is not free ")
                    + "is held by the OS, its page cache and other programs (another engine included), not by a GPU "
                    "of its own" + (": nvidia-smi shows no memory use there" if dev.id == "dgx-spark" else "")
                    + ", and there is one GPU. " + floor
                    + "vLLM asks for --gpu-memory-utilization × that total, so the fraction must fit in what is free: "
                    "lower it.")
    fixes = [f for f in doc.get("fixes", []) if not any(w in f["command"] for w in _NOT_HERE)]
    doc["fixes"] = fixes + [{"title": "See what holds the machine's RAM (the GPU's memory here)",
                             "command": "free -g && ps -eo pid,rss,comm --sort=-rss | head",
                             "effect": "from vLLM 0.20 the free figure on a unified GPU is the RAM 'available' "
                                       "(psutil; vllm/utils/mem_utils.py MemorySnapshot.measure)"}]
    return doc
