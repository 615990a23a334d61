"""Prompt speed on NVIDIA workstation cards and with F16 weights (hardware/nvidia_peak.py), from the command a user
types: `runlocal check … --explain` names the corrections, and the figures move the way the measured tables did."""

import json

import pytest
from typer.testing import CliRunner

from runlocal.cli import app
from runlocal.hardware import speed as S
from runlocal.hardware.catalog import find_device
from runlocal.hardware.nvidia_peak import clock_share, fp16_accumulate_factor


def _check(*args: str) -> dict:
    out = CliRunner().invoke(app, ["check", *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)["speed"]


def _explain(*args: str) -> str:
    out = CliRunner().invoke(app, ["check", *args, "--explain"])
    assert out.exit_code == 0, out.output
    return " ".join(out.output.split())


def test_an_rtx_6000_ada_prompt_is_not_faster_than_a_4090s():
    """Same die family, more SMs, 300 W instead of 450: XiongjieDai's tables (seen) have the RTX 6000 Ada at 5,792
    prompt tokens/s against the 4090's 7,139 for Llama-3-8B Q4_K_M; by datasheet peaks alone it would be 10 % faster."""
    ada = _check("llama-3-8b", "--gpu", "rtx-6000-ada", "--quant", "Q4_K_M")["prefill_tokens_per_s"]
    geforce = _check("llama-3-8b", "--gpu", "rtx-4090", "--quant", "Q4_K_M")["prefill_tokens_per_s"]
    assert ada < geforce
    text = _explain("llama-3-8b", "--gpu", "rtx-6000-ada", "--quant", "Q4_K_M")
    assert "power-limited clock: 300 W for 728.5 int8 TOPS" in text


def test_f16_weights_on_a_geforce_card_take_the_fp16_accumulate_rate():
    """An F16 GGUF on an RTX 4090: cuBLAS with FP16 accumulation, twice the catalog's FP32-accumulate figure; the
    workstation RTX A6000 already runs its figure at the full rate, and BF16 weights take FP32 accumulation."""
    text = _explain("llama-3-8b", "--gpu", "rtx-4090", "--quant", "F16")
    assert "× 2 (llama.cpp's F16 path: cuBLAS accumulates in FP16" in text
    assert "cuBLAS accumulates" not in _explain("llama-3-8b", "--gpu", "rtx-a6000", "--quant", "F16")
    g4090, a6000, h100 = find_device("rtx-4090"), find_device("rtx-a6000"), find_device("h100")
    # NVIDIA's Ada whitepaper lists the RTX 4090 at 330.3 FP16 tensor TFLOPS with FP16 accumulate, 165.2 with FP32
    assert fp16_accumulate_factor(g4090, "F16", "cuda") == pytest.approx(330.3 / 165.2, rel=0.01)
    for full_rate in ("l4", "t4"):      # datacenter parts list one figure for both accumulations
        assert fp16_accumulate_factor(find_device(full_rate), "F16", "cuda") == 1.0
    assert fp16_accumulate_factor(g4090, "BF16", "cuda") == 1.0
    assert fp16_accumulate_factor(g4090, "F16", "vulkan") == 1.0
    assert fp16_accumulate_factor(a6000, "F16", "cuda") == 1.0
    assert fp16_accumulate_factor(h100, "F16", "cuda") == 1.0


def test_the_clock_share_follows_board_power_per_tops_within_an_architecture():
    """Only an architecture with a fitted knee is corrected, and within it the card with less power per TOPS runs at a
    lower share; a GeForce Ampere card over its knee keeps its boost clock, an HBM part has no knee."""
    knees = S.POWER_KNEE_W_PER_TOPS
    assert set(knees) <= {"8.6", "8.9"}
    l40s, ada6000, g4080 = find_device("l40s"), find_device("rtx-6000-ada"), find_device("rtx-4080")
    assert clock_share(ada6000, knees) < clock_share(l40s, knees) < 1.0
    assert clock_share(g4080, knees) > clock_share(l40s, knees)
    assert clock_share(find_device("rtx-3090"), knees) == 1.0
    assert clock_share(find_device("a100-pcie-80gb"), knees) == 1.0
    text = _explain("llama-3-8b", "--gpu", "rtx-3090", "--quant", "Q4_K_M")
    assert "power-limited clock" not in text


def test_a_card_below_the_fitted_power_range_is_not_extrapolated():
    """The Ada knee is fitted on cards of 0.41–0.89 W per int8 TOPS; an L4 (72 W for 242.5 TOPS, 0.30) lies below all of
    them and has no record, so --explain says so and its prompt is not slowed past the lowest fitted card's share: the
    RTX 6000 Ada (300 W for 728.5 TOPS, the lowest fitted) and the L4 are held at the same share of their peaks."""
    text = _explain("llama-3.1-8b", "--gpu", "l4")
    assert "fitted: this architecture's prompt rate falls with W per TOPS below 0.8" in text
    assert "0.30 is extrapolated beyond the fitted range" in text
    fitted = _explain("llama-3.1-8b", "--gpu", "rtx-6000-ada")
    assert "power-limited clock: 300 W for 728.5 int8 TOPS" in fitted and "extrapolated" not in fitted
    l4, ada6000 = find_device("l4"), find_device("rtx-6000-ada")
    knees, floors = S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR
    assert clock_share(l4, knees, floors) == pytest.approx(clock_share(ada6000, knees, floors), rel=0.005)   # floor rounded down
    assert clock_share(l4, knees, floors) > clock_share(l4, knees)      # the unclamped line would go on falling
    assert clock_share(ada6000, knees, floors) == clock_share(ada6000, knees)
