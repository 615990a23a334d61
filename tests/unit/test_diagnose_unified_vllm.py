"""vLLM's start-up refusal on a DGX Spark (review22 finding 2): the total is a unified device's CUDA total (121.69 GiB on
a GB10), so the cause is the OS and page cache holding the RAM, and the fixes that look for another process with
nvidia-smi or a second GPU are dropped. The pastes are the public GB10 logs' own lines."""

from __future__ import annotations

import pytest

from runlocal.diagnose.fixes import with_computed_fixes
from runlocal.diagnose.reading import diagnose_text

LINE = ("ValueError: Free memory on device cuda:0 ({free}/{total} GiB) on startup is less than desired GPU memory "
        "utilization ({util}, {asked} GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")


def doc_for(free, total, util, asked):
    return with_computed_fixes(diagnose_text(LINE.format(free=free, total=total, util=util, asked=asked)))


@pytest.mark.parametrize("free, util, asked, fits", [
    (85.92, 0.92, 111.95, "0.70"),   # a GB10 crash loop (review22 E8): 85.92 / 121.69 = 0.706 → 0.70
    (102.2, 0.87, 105.87, "0.83"),   # MiaAI-Lab#47's floor: 102.2 / 121.69 = 0.840 → 0.83 (0.84 × 121.69 = 102.22 > 102.2)
    (67.92, 0.7, 85.18, "0.55"),     # NVIDIA-AI-Blueprints/video-search-and-summarization#1743: 67.92 / 121.69 = 0.558
])
def test_a_gb10_refusal_is_answered_for_unified_memory(free, util, asked, fits):
    doc = doc_for(free, 121.69, util, asked)
    assert doc["category"] == "vllm_gpu_util"
    commands = [f["command"] for f in doc["fixes"]]
    assert commands[0].endswith(f"--gpu-memory-utilization {fits}")
    assert not any("nvidia-smi" in c or "CUDA_VISIBLE_DEVICES" in c for c in commands)
    assert "DGX Spark" in doc["cause"] and "page cache" in doc["cause"]
    assert f"{121.69 - free:.2f} GiB not free" in doc["cause"]


def test_a_discrete_card_keeps_the_other_process_fixes():
    # an RTX 4090's total as CUDA reports it (23.64 GiB): another process is the likely holder there
    doc = doc_for(19.77, 23.64, 0.9, 21.28)
    commands = [f["command"] for f in doc["fixes"]]
    assert any("nvidia-smi" in c for c in commands)
    assert "DGX Spark" not in doc["cause"]
