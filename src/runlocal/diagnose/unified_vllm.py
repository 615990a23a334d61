"""vLLM's start-up refusal on an NVIDIA unified-memory device (review22 finding 2): "Free memory on device cuda:0
(85.92/121.69 GiB) on startup is less than desired GPU memory utilization (0.92, 111.95 GiB)".

On a DGX Spark (GB10) or a Jetson the GPU and the CPU share one RAM, so what is not free is the OS, its page cache and
the other programs, not another process on a second card: nvidia-smi reports no memory use there ("Memory-Usage: Not
Supported") and there is no other GPU to pin vLLM to. The largest fraction that fits (fixes.vllm_utilization_fixes,
from the log's own free / total) is the fix; dropping the page cache helps by a few GiB (after a large weight copy)
but not to the total: on one pair of GB10s free memory topped out at 101.3-102.2 GiB of 121.69 across fresh headless
boots with the caches dropped (MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47), and NVIDIA documents the cache flush as
a diagnostic workaround with caveats (NVIDIA/xr-ai#440, "DGX Spark UMA OOM troubleshooting").

A unified device is recognised by the total the log prints (vLLM prints GiB to two decimals), which is CUDA's total
for that board, not its marketed RAM: the figures below, and any unified device of the catalog that carries its CUDA
total (devices.json cuda_total_gib).
"""

from __future__ import annotations

import re
from typing import Any

from ..units import GiB

# (CUDA's total as vLLM / ggml print it, the device, where the figure is printed)
UNIFIED_CUDA_TOTALS: tuple[tuple[float, str, str], ...] = (
    (121.69, "DGX Spark (GB10)", "MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47 ('Free memory on device (110.37/121.69 "
     "GiB)'); a GB10 crash loop quoted in a public test fixture ('(85.92/121.69 GiB) … (0.92, 111.95 GiB)', code "
     "corpus find_string id 62518840803)"),
    (61.35, "Jetson AGX Orin 64GB", "AgentStop's README (ACM CAIS '26), llama.cpp b8762 on an Orin AGX 64GB, JetPack "
     "6.2.2: 'found 1 CUDA devices (Total VRAM: 62827 MiB)' = 61.35 GiB (code corpus find_string id 58111358145)"),
)
_PRINTED_TO = 0.006   # GiB: two decimals, as printed
_OTHER_GPU = re.compile(r"nvidia-smi|CUDA_VISIBLE_DEVICES")
DROP_CACHES = "sync && echo 3 | sudo tee /proc/sys/vm/drop_caches && free -g   # then start vLLM again"


def unified_device(total_bytes: Any) -> str | None:
    """The NVIDIA unified-memory device whose CUDA total is ``total_bytes`` (to the log's two decimals of a GiB), or
    None."""
    if not total_bytes:
        return None
    gib = float(total_bytes) / GiB
    known = list(UNIFIED_CUDA_TOTALS)
    try:
        from ..hardware.catalog import load_devices
        known += [(d.cuda_total_bytes / GiB, d.name, str(d.cuda_total_source)) for d in load_devices()
                  if d.unified_memory and d.vendor == "nvidia" and d.cuda_total_bytes]
    except (OSError, ValueError):   # the catalog unreadable: the figures above still answer
        pass
    return next((name for total, name, _ in known if abs(gib - total) <= _PRINTED_TO), None)


def on_unified(cause: str, computed: list[dict[str, str]], kb_fixes: list[dict[str, str]],
               ex: dict[str, Any]) -> tuple[str, list[dict[str, str]], list[dict[str, str]]]:
    """vllm_gpu_util's cause and fixes where the log's total is a unified device's: the cause says the OS and its page
    cache hold the memory; the computed fraction stays first; nvidia-smi and CUDA_VISIBLE_DEVICES go; dropping the
    page cache comes after, with how far it goes."""
    device = unified_device(ex.get("total_bytes"))
    if device is None:
        return cause, computed, kb_fixes
    total, free = float(ex["total_bytes"]) / GiB, float(ex.get("free_bytes") or 0) / GiB
    held = f"{total - free:.2f} GiB of the {total:.2f} GiB" if free else "the rest of the memory"
    cause = (f"This is a unified-memory {device}: the GPU and the CPU share one RAM, of which CUDA reports "
             f"{total:.2f} GiB as the total. {held[0].upper() + held[1:]} not free when vLLM started is held by the "
             "operating system, its page cache and the other programs, not by another GPU process; vLLM asks for its "
             "fraction of the total and stops when less than that is free.")
    drop = {"title": "Drop the page cache before starting vLLM (a few GiB after a large file copy, not the total)",
            "command": DROP_CACHES,
            "effect": "frees the file pages the OS cached; on one pair of GB10s free memory still topped out at "
                      "101.3-102.2 of 121.69 GiB headless with caches dropped (MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47; "
                      "NVIDIA/xr-ai#440 calls the flush a diagnostic workaround), so the fraction above is the fix"}
    kept_computed = [f for f in computed if not _OTHER_GPU.search(f["command"])]
    kept_kb = [f for f in kb_fixes if not _OTHER_GPU.search(f["command"])]
    return cause, kept_computed + [drop], kept_kb
