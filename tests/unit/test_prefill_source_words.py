"""--explain says which fit entry a prompt efficiency is and whether the entry fitted it or carries its parent's
(review15b #1: the Radeon 8060S printed the all-device rate with no word that it was not fitted on the chip)."""

import pytest

from runlocal.hardware import speed as S
from runlocal.hardware import speed_explain as E
from runlocal.hardware.catalog import find_device


def _fit(quant: float, float_eff: float = 0.5) -> S.Fit:
    return S.Fit(decode_eff=0.8, layer_us=60.0, kv_factor=3.0, prefill_eff_quant=quant, prefill_eff_float=float_eff,
                 prefill_layer_us=0.0)


@pytest.fixture
def table(monkeypatch):
    # a hand-made table: "*" fitted on everything; soc/rocm fitted its own quantized rate (0.09) but, with under two
    # float-weight prompt records, kept "*"'s float rate (0.5); no soc/vulkan entry at all
    fits = {"*": _fit(0.2), "soc/rocm": _fit(0.09)}
    monkeypatch.setattr(E, "FIT", fits)
    return fits


def _place(backend: str) -> S.GPUPlace:
    dev = find_device("ryzen-ai-max-395-128gb")
    return S.GPUPlace(dev, S.device_class(dev), backend, ggml=True)


def test_an_entry_with_its_own_rate(table):
    words = E.prefill_source_words(_place("rocm"), "Q4_K_M", 0.09)
    assert words == "; efficiency 0.09: fitted on soc/rocm's own quantized-weight prompt records"


def test_an_entry_that_kept_its_parents_rate(table):
    words = E.prefill_source_words(_place("rocm"), "F16", 0.5)
    assert "borrowed from the all-device entry (*)" in words
    assert "soc/rocm has fewer than two float-weight prompt records of its own" in words


def test_no_entry_of_its_own(table):
    words = E.prefill_source_words(_place("vulkan"), "Q4_0", 0.2)
    assert words == ("; efficiency 0.2: the all-device entry (*)'s rate, not one fitted on soc/vulkan's "
                     "quantized-weight prompt records alone")


def test_another_entrys_efficiency_is_not_named(table):
    # an efficiency the chain does not hold (a build era's or architecture's entry) is left to _prefill_era_words
    assert E.prefill_source_words(_place("rocm"), "Q4_0", 0.3) == ""


def test_the_8060s_explain_names_its_entry():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "runlocal", "check", "llama-3.1-8b", "--gpu", "8060s", "--backend",
                          "vulkan", "-q", "Q4_K_S", "--explain"], capture_output=True, text=True, check=True).stdout
    text = " ".join(out.split())
    assert f"efficiency {S.FIT['soc/vulkan'].prefill_eff_quant:g}: fitted on soc/vulkan's own" in text
