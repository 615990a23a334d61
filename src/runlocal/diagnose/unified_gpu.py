"""vLLM's start-up refusal on an NVIDIA unified-memory device (review22 finding 2): the memory not free is the OS's.

vLLM stops when the memory free is below --gpu-memory-utilization × CUDA's total ("Free memory on device cuda:0
(102.2/121.69 GiB) on startup is less than desired GPU memory utilization (0.87, 105.87 GiB)", vllm/v1/worker/utils.py
request_memory). On a DGX Spark (GB10) or a Jetson the total is the RAM Linux sees (devices.json cuda_total_gib, e.g.
121.69 GiB on a GB10): what is not free there is held by the OS and its page cache, which MiaAI-Lab/GLM-5.3-Flash-EXL3-
2x-DGX-Sparks#47 found at the same floor headless, after dropping caches, on two driver branches. nvidia-smi shows no
memory use on these systems ("Memory-Usage: Not Supported", NVIDIA's DGX Spark known issues, devices.json
dgx-spark-memory) and there is one GPU, so the knowledge base's "another process" fixes (nvidia-smi, a second GPU
through CUDA_VISIBLE_DEVICES) do not apply; the lower fraction computed from the log's own figures does.
"""

from __future__ import annotations

from typing import Any

from ..units import GiB

_NOT_HERE = ("nvidia-smi", "CUDA_VISIBLE_DEVICES")


def unified_device(ex: dict[str, Any]):
    """The catalog's NVIDIA unified-memory device whose CUDA total the log's total is, at the log's two decimals."""
    total = ex.get("total_bytes")
    if not total:
        return None
    from ..hardware.catalog import load_devices

    logged = round(total / GiB, 2)
    return next((d for d in load_devices() if d.unified_memory and d.vendor == "nvidia" and d.cuda_total_bytes
                 and round(d.cuda_total_bytes / GiB, 2) == logged), None)


def on_unified_device(doc: dict[str, Any]) -> dict[str, Any]:
    """A vllm_gpu_util answer whose total is a unified device's: the cause said for that device, and the fixes that
    look for another process or another GPU dropped. Any other answer unchanged."""
    ex = doc.get("extracted") or {}
    dev = unified_device(ex) if doc.get("category") == "vllm_gpu_util" else None
    if dev is None:
        return doc
    held = (ex["total_bytes"] - ex["free_bytes"]) / GiB if ex.get("free_bytes") else None
    doc["cause"] = (f"The total, {ex['total_bytes'] / GiB:.2f} GiB, is CUDA's on {dev.name}, whose GPU shares the "
                    "machine's RAM: " + (f"the {held:.2f} GiB not free " if held is not None else "what is not free ")
                    + "is held by the OS, its page cache and other programs (another engine included), not by a GPU "
                    "of its own: nvidia-smi shows no memory use there, and there is one GPU. On a fresh headless boot "
                    "the OS alone keeps about 19.5 GiB of a GB10's 121.69 (MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks"
                    "#47: free 101.3–102.2 GiB). vLLM asks for --gpu-memory-utilization × that total, so the fraction "
                    "must fit in what is free: lower it.")
    fixes = [f for f in doc.get("fixes", []) if not any(w in f["command"] for w in _NOT_HERE)]
    doc["fixes"] = fixes + [{"title": "See what holds the machine's RAM (the GPU's memory here)",
                             "command": "free -g && ps -eo pid,rss,comm --sort=-rss | head",
                             "effect": "from vLLM 0.20 the free figure on a unified GPU is the RAM 'available' "
                                       "(psutil; vllm/utils/mem_utils.py MemorySnapshot.measure)"}]
    return doc
