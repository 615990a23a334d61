"""Decode on NVIDIA cards older than Volta (session 17, helper pascal17, measurements/speed/pascal2_queries.md): the fit
variant a memory class takes (backend_speed.pre_volta_decode_variant), the one constant fitted on its tuning rows
(speed_fit.fit_memory_share), and what a plan does without one."""

import json
from pathlib import Path

import pytest

from runlocal.evidence.speed_fit import build_rows, load_held_out, load_records, predict_row
from runlocal.hardware import speed as S
from runlocal.hardware.backend_speed import fits_parent, pre_volta_decode_variant
from runlocal.hardware.catalog import find_device

ROOT = Path(__file__).resolve().parents[2]
TUNING = ROOT / "measurements/speed/pascal_2026.jsonl"
GDDR5X = "nvidia-gddr/cuda:cc6-gddr5x"


@pytest.mark.parametrize("card, variant", [
    # the memory each card's datasheet names (catalog memory_type), its compute capability's major
    ("gtx-1080-ti", "cc6-gddr5x"), ("gtx-1080", "cc6-gddr5x"), ("tesla-p100-pcie-16gb", "cc6-hbm2"),
    # GP10x GDDR5 cards have no entry of their own: the GDDR5X class's (speed.PRE_VOLTA_SIBLING)
    ("tesla-p40", "cc6-gddr5x"), ("gtx-1070", "cc6-gddr5x"), ("gtx-1060-6gb", "cc6-gddr5x"), ("gtx-970", "cc5-gddr5"),
    ("tesla-m40-24gb", "cc5-gddr5"),
    # Volta and later, and the GTX 16xx (Turing, 7.5): no variant
    ("gtx-1660-ti", None), ("rtx-2080-ti", None), ("rtx-3090", None), ("v100-sxm2-32gb", None),
])
def test_a_pre_volta_card_decodes_on_its_memory_class(card, variant):
    dev = find_device(card)
    assert S.backend_variant(dev, "cuda") == variant
    assert S.backend_variant(dev, "cuda", decode=False) is None     # its prompt keeps the GDDR / HBM entry's path
    assert S.backend_variant(dev, "vulkan") is None                 # Vulkan is not ggml-cuda


def test_the_memory_classes_do_not_fit_their_parent():
    # an Intel architecture's rows fit the SYCL entry too; a Pascal card's must not move the GDDR CUDA entry (fitted on
    # cards with tensor cores and CUDA graphs)
    assert fits_parent("xe2") and fits_parent(None)
    assert not fits_parent("cc6-gddr5x")
    assert pre_volta_decode_variant("6.1", "GDDR5X", "vulkan") is None
    assert pre_volta_decode_variant("7.0", "HBM2", "cuda") is None


def _tuning(device: str) -> list[dict]:
    return [r for r in map(json.loads, TUNING.read_text().splitlines()) if r["device"] == device]


def test_the_gddr5x_share_is_one_constant_on_its_rows():
    entry, parent = S.FIT[GDDR5X], S.FIT["nvidia-gddr/cuda"]
    # one constant: the per-layer cost and the KV factor are the GDDR entry's, the prompt constants too
    assert (entry.layer_us, entry.kv_factor, entry.prefill_eff_quant) == (parent.layer_us, parent.kv_factor,
                                                                          parent.prefill_eff_quant)
    # hand computation from the two GTX 1080 Ti rows (Llama 2 7B Q4_0, tg128 at 62.5 and 61.4 t/s): the weights a
    # token reads, about 3.78 GB over 484 GB/s, are what is left of the token after 32 layers x 51 µs at a share of
    # 3.78/484 / (1/62.5 - 0.00163) = 0.544 and 3.78/484 / (1/61.4 - 0.00163) = 0.533: the fit lies between
    assert 0.533 <= entry.decode_eff <= 0.544
    assert entry.decode_eff < parent.decode_eff


def test_the_fitted_share_reproduces_its_rows_and_nothing_else_fits_them():
    rows = [r for r in build_rows(load_records()) if r.rec["device"] == "gtx-1080-ti" and r.kind == "tg"]
    assert {r.rec["tokens_per_s"] for r in rows} == {62.5, 61.4} and {r.key for r in rows} == {GDDR5X}
    for r in rows:      # in-sample: the check that the constant was fitted on these rows, not held-out evidence
        assert predict_row(r, S.FIT, S.SPLIT_OVERHEAD_MS) == pytest.approx(r.measured, rel=0.02)
    # the GTX 1060's TinyLlama row (WSL2 llama-server, 0.63 GB a token) fits nothing: a token's weights are a third of
    # its time there, so no share of bandwidth can be read from it; GDDR5 keeps no entry
    assert [r["fit_scope"] for r in _tuning("gtx-1060-6gb")] == ["scored_apart"]
    assert "nvidia-gddr/cuda:cc6-gddr5" not in S.FIT


def test_a_plan_on_a_gddr5x_card_reads_at_the_fitted_share():
    # the GDDR5X card's plan divides by 0.539 of 484 GB/s where the RTX 3090's uses 0.92 of 936: the entry is the
    # variant's for the GTX 1080 and 1080 Ti alone
    assert S.constants("nvidia-gddr", "cuda", S.backend_variant(find_device("gtx-1080"), "cuda")) == S.FIT[GDDR5X]
    assert S.constants("nvidia-gddr", "cuda", S.backend_variant(find_device("tesla-p40"), "cuda")) == S.FIT[GDDR5X]
    # the P100 (HBM2) and Maxwell keep the GDDR / HBM entries: nothing measured says their share
    assert pre_volta_decode_variant("6.0", "HBM2", "cuda") not in S.PRE_VOLTA_SIBLING


def test_the_p40_held_out_run_reads_at_the_gddr5x_share():
    # held_out/pascal.jsonl's one P40 decode (Qwen2.5-32B Q4_K_M, b5293: tg128 9.48 t/s), scored once in session 16 at
    # +64.4 % on the GDDR entry, never fitted on: at the GTX 1080 Ti's share (fitted without it) it reads within 5 %
    rows = [r for r in build_rows(load_held_out("pascal")) if r.kind == "tg"]
    assert [r.rec["tokens_per_s"] for r in rows] == [9.48]
    assert predict_row(rows[0], S.FIT, S.SPLIT_OVERHEAD_MS) == pytest.approx(9.48, rel=0.05)
