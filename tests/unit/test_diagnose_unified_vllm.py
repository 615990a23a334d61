"""review22 finding 2 (session 22, fixes22d): vLLM's start-up refusal on an NVIDIA unified-memory device (DGX Spark /
GB10, Jetson) is answered with the fraction that fits and the OS's page cache, not with another GPU process.

The GB10 text is a public crash loop (a test fixture quoting it: code corpus find_string id 62518840803; review22 E8,
not in measurements/public_errors — grep "121.69" finds nothing there) and review22's E3, written from
MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47's figures. Fractions are worked by hand below from the log's own numbers.
"""

from __future__ import annotations

import math

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes
from runlocal.diagnose.unified_vllm import unified_device

_LINE = ("ValueError: Free memory on device cuda:0 ({free}/{total} GiB) on startup is less than desired GPU memory "
         "utilization ({util}, {asked} GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
         "processes.\nRuntimeError: Engine core initialization failed.\n")
GB10_CRASH_LOOP = _LINE.format(free="85.92", total="121.69", util="0.92", asked="111.95")   # E8
GB10_AT_087 = _LINE.format(free="102.2", total="121.69", util="0.87", asked="105.87")        # E3 (MiaAI-Lab#47)


def _answer(text: str) -> tuple[dict, list[str]]:
    doc = with_computed_fixes(diagnose_text(text))
    return doc, [f["command"] for f in doc["fixes"]]


@pytest.mark.parametrize("text, free, total", [(GB10_CRASH_LOOP, 85.92, 121.69), (GB10_AT_087, 102.2, 121.69)])
def test_a_gb10_refusal_keeps_the_fraction_and_drops_other_gpu_fixes(text: str, free: float, total: float) -> None:
    doc, commands = _answer(text)
    assert doc["category"] == "vllm_gpu_util"
    # the largest fraction that fits, by hand: floor(free / total, 2 decimals): 85.92 / 121.69 = 0.706 → 0.70
    # (0.70 × 121.69 = 85.18 ≤ 85.92); 102.2 / 121.69 = 0.840 → 0.83 (floor of 83.98; 0.83 × 121.69 = 101.00 ≤ 102.2)
    fits = math.floor(free / total * 100) / 100
    assert fits * total <= free
    assert commands[0].endswith(f"--gpu-memory-utilization {fits:.2f}")
    assert not any("nvidia-smi" in c or "CUDA_VISIBLE_DEVICES" in c for c in commands), commands
    assert "page cache" in doc["cause"] and "another vLLM" not in doc["cause"]
    assert f"{total - free:.2f} GiB" in doc["cause"]      # 35.77 / 19.49 GiB held by the OS, by subtraction
    assert any("drop_caches" in c for c in commands)


def test_a_jetson_total_is_unified_and_a_desktop_card_is_not() -> None:
    # 62,827 MiB (ggml_cuda_init on an Orin AGX 64GB) = 61.354 GiB, printed 61.35 by vLLM
    assert unified_device(61.35 * 2**30) is not None
    assert unified_device(62827 * 2**20) is not None
    assert unified_device(23.64 * 2**30) is None            # an RTX 4090's CUDA total
    assert unified_device(None) is None


def test_a_discrete_card_keeps_the_other_process_answer() -> None:
    # the same refusal on a 24 GB desktop card (CUDA total 23.64 GiB): another process is the likely holder
    doc, commands = _answer(_LINE.format(free="12.10", total="23.64", util="0.90", asked="21.28"))
    assert doc["category"] == "vllm_gpu_util"
    assert "another vLLM" in doc["cause"]
    assert any("nvidia-smi" in c for c in commands)
    assert not any("drop_caches" in c for c in commands)
