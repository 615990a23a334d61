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


def test_the_gb10_floor_is_said_as_its_range():
    # MiaAI-Lab#47: free 101.3–102.2 GiB of 121.69 → the OS keeps 121.69 − 102.2 = 19.49 to 121.69 − 101.3 = 20.39 GiB
    doc = doc_for(102.2, 121.69, 0.87, 105.87)
    assert "19.5–20.4 GiB of a GB10's 121.69" in doc["cause"]


def test_a_jetson_agx_orin_total_is_said_for_that_device_not_a_gb10():
    # review22b's u1: 61.35 GiB is CUDA's total on a Jetson AGX Orin 64GB (62,827 MiB, devices.json cuda_total_note);
    # 61.35 − 40.12 = 21.23 GiB not free. No GB10 figure, no nvidia-smi claim (that is the Spark's known issue)
    doc = doc_for(40.12, 61.35, 0.9, 55.22)
    assert "Jetson AGX Orin 64GB" in doc["cause"] and "21.23 GiB not free" in doc["cause"]
    assert "GB10" not in doc["cause"] and "nvidia-smi" not in doc["cause"]
    assert not any("nvidia-smi" in f["command"] for f in doc["fixes"])


def test_a_bare_small_total_is_no_jetson_unless_the_paste_says_so():
    # 7.43 GiB is the Orin Nano Super 8GB's total (7,607 MiB); the Orin NX 8GB and the original Orin Nano carry the
    # same 8 GB, so the family is named, and only where the paste names a Jetson
    line = LINE.format(free=5.10, total=7.43, util=0.9, asked=6.69)
    bare = with_computed_fixes(diagnose_text(line))
    assert "Jetson" not in bare["cause"]
    assert any("nvidia-smi" in f["command"] for f in bare["fixes"])      # another process is still the lead there
    for said in ("vllm serve on my Jetson Orin Nano", "Tegra release r36.4.0", "Orin NX, JetPack 6.2"):
        named = with_computed_fixes(diagnose_text(said + "\n" + line))
        assert "a Jetson Orin with 8 GB" in named["cause"], said
        assert not any("nvidia-smi" in f["command"] for f in named["fixes"])
    # a word inside another ("monitoring", "author") names nothing
    assert "Jetson" not in with_computed_fixes(diagnose_text("monitoring by the author\n" + line))["cause"]
