"""Coverage (issue 18): the boxes users name resolve to catalog devices with cited specs, and a model that cannot
be resolved offline says so — not "repo has no config.json"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from runlocal.hardware.catalog import find_device, load_sources

GiB = 1 << 30


@pytest.mark.parametrize("name, device_id, gib, gbs", [
    # NVIDIA's Jetson Orin technical specifications: 256-bit LPDDR5 at 204.8 GB/s (AGX), 128-bit at 102.4 (NX)
    ("Jetson AGX Orin", "jetson-agx-orin-64gb", 64, 204.8),
    ("AGX Orin 32GB", "jetson-agx-orin-32gb", 32, 204.8),
    ("Orin NX", "jetson-orin-nx-16gb", 16, 102.4),
    ("Jetson Orin NX 8GB", "jetson-orin-nx-8gb", 8, 102.4),
    # the Orin Nano developer kit's JetPack 6.1 'Super' clocks: 102 GB/s (68 before)
    ("Jetson Orin Nano", "jetson-orin-nano-super-8gb", 8, 102.0),
    ("Jetson Orin Nano 4GB", "jetson-orin-nano-4gb", 4, 34.0),
    ("DGX Spark", "dgx-spark", 128, 273.0),
    ("Ryzen AI Max+ 395", "ryzen-ai-max-395-128gb", 128, 256.0),
])
def test_boxes_users_name(name, device_id, gib, gbs):
    d = find_device(name)
    assert (d.id, d.memory_bytes, d.bandwidth_gbs) == (device_id, gib * GiB, gbs)
    assert d.unified_memory and load_sources()[d.source].startswith("https://")


def test_jetson_plans_on_cuda_in_unified_memory():
    from runlocal.check import check
    from runlocal.request import CheckRequest

    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="Jetson AGX Orin", ctx=8192))
    d = plan.to_dict()
    assert d["memory"]["devices"][0]["kind"] == "unified"
    assert next(s for s in d["explain"] if s["label"] == "backend")["value"] == "cuda"


def test_offline_unknown_model_says_offline(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "RUNLOCAL_HOME": str(tmp_path)}
    r = subprocess.run(check=False, args=[sys.executable, "-m", "runlocal.cli", "check", "zai-org/GLM-5", "--gpu", "h100"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    line = r.stderr.strip()
    assert "offline" in line and "not in the catalog or the Hugging Face cache" in line
    assert "no config.json" not in line and "\n" not in line
