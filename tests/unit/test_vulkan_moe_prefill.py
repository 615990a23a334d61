"""MoE prompt speed on Vulkan (session 19): each expert's mul_mm_id tiles padded to the width ggml-vulkan picks.

Expected values are worked out here from ggml-vulkan's own numbers at 0c1e57098 (the stored llama.cpp copy), not read
back from backend_speed: the tile selector (ggml-vulkan.cpp matmul_id_tile_selector) picks BN against
n = ceil(ubatch × n_used / n_experts); with NV_coopmat2 the mul_mat_id quant tiles are 64 wide up to n = 64 and 128
above (m/s_mmqid_wg_denoms {128, 64}, l {128, 128}); without it 32 wide up to n = 32, 64 up to 64, then 128
(s/m/l_mmq_wg_denoms); mul_mm.comp runs a tile whole unless it starts past its expert's count."""

import json
import math
from pathlib import Path

import pytest

from runlocal.hardware import backend_speed as BS

ROOT = Path(__file__).resolve().parents[2]


def expected_column_tiles(ubatch: int, p: float, width: int) -> float:
    """E[ceil(t / width)], t ~ Binomial(ubatch, p), written as Σ_k P(t > k·width) over k ≥ 0 (tail sums)."""
    def tail(x: int) -> float:   # P(t > x)
        return sum(math.comb(ubatch, t) * p**t * (1 - p) ** (ubatch - t) for t in range(x + 1, ubatch + 1))
    return sum(tail(k * width) for k in range(ubatch // width + 1))


@pytest.mark.parametrize(("n", "coopmat2", "width"), [
    (16, False, 32), (32, False, 32), (33, False, 64), (64, False, 64), (65, False, 128),
    (16, True, 64), (64, True, 64), (65, True, 128), (256, True, 128),
])
def test_tile_width_follows_the_selector(n, coopmat2, width):
    assert BS.vulkan_id_tile_width(n, coopmat2) == width


def test_qwen3_30b_on_a_radeon_pads_32_wide_tiles():
    # 128 experts, 8 used, 512 tokens: n = 32 → BN 32 without coopmat2; an expert gets 32 tokens on average
    want = 32 * expected_column_tiles(512, 8 / 128, 32) / 32
    assert BS.vulkan_expert_factor(128, 8, 512, coopmat2=False) == pytest.approx(want, rel=1e-9)
    assert 1.4 < want < 1.7      # about half the experts spill into a second, mostly empty tile


def test_gpt_oss_20b_on_an_nvidia_card_with_coopmat2():
    # 32 experts, 4 used: n = 64 → BN 64 with coopmat2 (the RTX 4090's default path), 64 without
    want = 64 * expected_column_tiles(512, 4 / 32, 64) / 64
    assert BS.expert_tile_factor(32, 4, 512, "vulkan", "nvidia", True, "8.9") == pytest.approx(want, rel=1e-9)
    # qwen3-30b-a3b: n = 32 → coopmat2's 64-wide tile, about twice the routed FLOPs
    assert BS.expert_tile_factor(128, 8, 512, "vulkan", "nvidia", True, "8.9") == pytest.approx(
        64 * expected_column_tiles(512, 8 / 128, 64) / 32, rel=1e-9)
    # a record that states KHR_coopmat on the same card takes the coopmat1 widths
    assert BS.expert_tile_factor(128, 8, 512, "vulkan", "nvidia", True, "12.0", coopmat2=False) == pytest.approx(
        32 * expected_column_tiles(512, 8 / 128, 32) / 32, rel=1e-9)


def test_float_experts_and_dense_models():
    # mul_mm_id pads float experts the same way (the tile path is the same shader); a dense model has no experts
    assert BS.expert_tile_factor(128, 8, 512, "vulkan", "amd", False) > 1.0
    assert BS.expert_tile_factor(0, 0, 512, "vulkan", "amd", True) == 1.0


def test_declined_while_the_held_out_round_fails(monkeypatch):
    # the round failed (held_out/moeprefill_first_run.txt): plans decline with the reason; switched on, the gap goes
    why = BS.moe_prefill_gap(128, "vulkan", gfx_target="gfx1151", quant="Q4_0") or ""
    assert "mixture of experts on vulkan" in why and "moeprefill_first_run.txt" in why
    monkeypatch.setattr(BS, "VULKAN_MOE_APPLIED", True)
    assert BS.moe_prefill_gap(128, "vulkan", gfx_target="gfx1151", quant="Q4_0") is None
    assert "mixture of experts on sycl" in (BS.moe_prefill_gap(128, "sycl", quant="Q4_0") or "")


def test_the_round_split_every_third_table():
    # the rule (held_out/moeprefill_queries.md): tables numbered in the order found, every third held out; the held-out
    # tables (3, 6), scored once in session 19, are tuning since session 20 and say so
    tuning = [json.loads(line) for line in (ROOT / "measurements/speed/moeprefill_2026.jsonl").read_text().splitlines()]
    spent = [r for r in tuning if r.get("spent")]
    assert {r["table"] for r in spent} == {3, 6} and not any(r.get("holdout") for r in tuning)
    assert {r["table"] for r in tuning if not r.get("spent")} == {1, 2, 4, 5}
    assert all(r["fit_scope"] == "moe_prefill" and r["backend"] == "vulkan" for r in tuning)
    assert max(sum(r["table"] == t for r in tuning) for t in range(1, 7)) <= 8      # at most 8 a table


def test_the_round_is_scored_apart_from_round_one_and_from_the_fit():
    from runlocal.evidence import speed_fit as F
    from runlocal.evidence import speed_fit_moe as M
    # round 1's held-out loader leaves the round's file out; the fit's loader leaves its tuning scope out
    assert not any(r["_file"].startswith("held_out/moeprefill") for r in F.load_held_out())
    assert not any(r.get("fit_scope") == "moe_prefill" for r in F.load_records())
    assert {r.rec["_file"] for r in M.held_out_rows()} <= {"held_out/moeprefill3.jsonl"}
    tuning = M.tuning_rows()
    assert len(tuning) == 33 and all(r.backend == "vulkan" and r.n_experts for r in tuning)
    # no dense entry is fitted on a Vulkan MoE prompt row
    assert all(F.vulkan_moe_prompt(r) for r in tuning)
    assert not F.prefill_rows(tuning, False) and not F.prefill_rows(tuning, True)
