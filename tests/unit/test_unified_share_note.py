"""A unified-memory device's GPU share is stated as what it is: a measured limit (devices.json share_source: the
runtime's own log of the working set) or runlocal's assumption where none is measured (review14 finding 12: a Jetson's
48 of 64 GiB read as the device's cap)."""

from __future__ import annotations

from runlocal.hardware.catalog import DEFAULT_UNIFIED_SHARE, find_device
from runlocal.hardware.targets import targets_from_options


def _note(gpu: str) -> str:
    _, notes = targets_from_options(gpu, None, None)
    return next(n for n in notes if "unified memory" in n)


def test_an_assumed_share_says_it_is_assumed():
    orin = find_device("agx-orin")
    assert orin.gpu_memory_share is None          # devices.json: no fixed GPU cap measured for Jetson
    note = _note("agx-orin")
    assert f"{0.75 * 64:.1f} of 64 GiB" in note and DEFAULT_UNIFIED_SHARE == 0.75
    assert "assumed 75%, not the device's limit" in note


def test_a_measured_share_is_stated_plainly():
    m2 = find_device("m2-max-32gb")
    assert m2.gpu_memory_share is not None and m2.share_source   # ollama#434's 21845.34 MB on a 32 GB M2 Max
    note = _note("m2-max-32gb")
    assert "21.3 of 32 GiB" in note and "assumed" not in note
