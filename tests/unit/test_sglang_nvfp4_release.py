"""SGLang's NVFP4 minimum compute capability by release and format, read in its wheels
(measurements/sglang_versions/wheels.txt); each line quoted is the wheel's, not runlocal's."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.request import CheckRequest
from runlocal.runtimes.published import kernel_check

H100, V100, B200 = "NVIDIA H100 SXM 80GB", "NVIDIA V100 SXM2 32GB", "NVIDIA B200 180GB"


@pytest.mark.parametrize("release, refused", [
    # 0.5.11 layers/quantization/modelopt_quant.py:1141-1142 `def get_min_capability(cls) -> int: return 100`
    # (ModelOptFp4Config), checked by model_loader/loader.py:244 `if capability < quant_config.get_min_capability():`
    ("0.4.6", True), ("0.5.9", True), ("0.5.11", True), ("0.5.12", True),        # 0.5.12 not read: 0.5.11's rule
    # 0.5.13 modelopt_quant.py:1204-1205 `return 80`; fp4_utils.py:153-156 `if backend == "auto": … elif is_cuda() and
    # (10, 0) > get_device_capability() >= (8, 0): backend = "marlin"` — the same in 0.5.16 – 0.5.23 (fp4_utils.py:150
    # / :154)
    ("0.5.13", False), ("0.5.19", False), ("0.5.23", False), (None, False),
])
def test_modelopt_nvfp4_on_hopper_by_release(release, refused):
    refusal, note = kernel_check("modelopt-nvfp4", H100, "sglang", release)
    assert (refusal is not None) == refused, release
    if refused:
        # SGLang's own words at capability 9.0: capability = major * 10 + minor (loader.py:243) = 90
        assert '"The quantization method modelopt_fp4 is not supported for the current GPU. Minimum capability: 100. ' \
               'Current capability: 90."' in refusal
    else:
        assert note is not None and "weight-only (FP4 Marlin)" in note


@pytest.mark.parametrize("release, refused", [
    # 0.5.21 compressed_tensors.py:720-728: `is_fp4a4_nvfp4_supported = self._check_scheme_supported(
    # CompressedTensorsW4A4Fp4.get_min_capability(), error=False)` (100) … `raise NotImplementedError("Current platform
    # does not support w4a4 nvfp4 quantization.")`, the same in 0.5.7 :469-478
    ("0.5.9", True), ("0.5.21", True),
    # 0.5.23 :757-783: below it "NVFP4 w4a4 requires compute capability >= 10.0; serving this checkpoint weight-only via
    # FP4 Marlin instead." → CompressedTensorsW4A16Fp4 (get_min_capability 80, compressed_tensors_w4a16_nvfp4.py:137)
    ("0.5.23", False), (None, False),
])
def test_compressed_tensors_nvfp4_on_hopper_by_release(release, refused):
    refusal, _ = kernel_check("ct-nvfp4", H100, "sglang", release)
    assert (refusal is not None) == refused, release
    if refused:
        assert '"Current platform does not support w4a4 nvfp4 quantization."' in refusal


def test_below_8_0_and_on_blackwell():
    # capability 70 < 80 (get_min_capability 80 from 0.5.13): refused in every release; Blackwell (100) never
    assert "≥ 8 in SGLang" in kernel_check("modelopt-nvfp4", V100, "sglang")[0]
    for release in ("0.5.11", "0.5.23"):
        assert kernel_check("modelopt-nvfp4", B200, "sglang", release) == (None, None)
        assert kernel_check("ct-nvfp4", B200, "sglang", release) == (None, None)


def test_the_plan_uses_the_release_named():
    request = dict(model="qwen3-8b", quant="nvfp4", gpu="h100", use_measurements=False)
    old = check(CheckRequest(runtime="sglang==0.5.11", **request))[0]
    assert old.allocation.refusal and "Minimum capability: 100" in old.allocation.refusal
    now = check(CheckRequest(runtime="sglang", **request))[0]
    assert now.allocation.refusal is None
    assert any("weight-only (FP4 Marlin)" in a for a in now.allocation.assumptions)
