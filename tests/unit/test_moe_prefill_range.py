"""A MoE prompt with no validated figure prints a range (backend_speed.MOE_PREFILL_RANGES): its ends read off the
tuning records (evidence/speed_fit_moe.py), the plan's JSON, text and --explain carry it, other plans do not."""

import math
from pathlib import Path

from asking import ask

from runlocal.evidence import speed_fit_moe as M
from runlocal.hardware import backend_speed as BS
from runlocal.hardware import speed as S
from runlocal.render.text import speed_phrase

ROOT = Path(__file__).resolve().parents[2]


def _ratios():
    pairs = M.priced_rows(M.tuning_rows(), M.fallback_rows(), dict(S.FIT), S.SPLIT_OVERHEAD_MS)
    return M.range_ratios(pairs), pairs


def test_the_ends_are_the_tuning_rows_spread_rounded_outward():
    ratios, pairs = _ratios()
    assert set(ratios) == set(BS.MOE_PREFILL_RANGES)
    for group, values in ratios.items():
        rng = BS.MOE_PREFILL_RANGES[group]
        assert rng.low == math.floor(min(values) * 100) / 100 and rng.rows == len(values)
        assert rng.sources == len({r.rec["source_url"] for r, _ in pairs if M.range_group(r) == group})
        if group[0] == "vulkan":        # both ends measured
            assert rng.high == math.ceil(max(values) * 100) / 100
        else:                           # the per-expert path at the dense rate: the source's upper end
            assert rng.high == 1.0 and max(values) < 1.0
        assert all(rng.low <= v <= rng.high for v in values)


def test_the_sycl_end_is_the_one_public_run():
    # llama.cpp #22413: an Arc Pro B60's Qwen3.6-35B-A3B Q4_K_M pp512 at b9159, 373.5 tokens/s measured; 373.5 / 3,440
    # (the dense formula's price, the figure MOE_PREFILL_UNMODELLED quotes) = 0.1086 → 0.10 rounded down
    (row, priced), = [(r, p) for r, p in _ratios()[1] if r.backend == "sycl"]
    assert row.measured == 373.5 and round(priced) == 3440
    assert BS.MOE_PREFILL_RANGES[("sycl", "")].low == 0.10


def test_the_groups_follow_the_vulkan_path_the_source_picks():
    # NV_coopmat2 on NVIDIA, coopmat1 / scalar elsewhere: NVIDIA's rows sit above the priced figure, AMD's mostly below
    assert BS.moe_prefill_range("vulkan", "NVIDIA") is BS.MOE_PREFILL_RANGES[("vulkan", "nvidia")]
    assert BS.moe_prefill_range("vulkan", "AMD") is BS.MOE_PREFILL_RANGES[("vulkan", "amd")]
    assert BS.moe_prefill_range("rocm", "amd") is BS.MOE_PREFILL_RANGES[("rocm", "")]
    assert BS.moe_prefill_range("cuda", "nvidia") is None and BS.moe_prefill_range("metal", "apple") is None
    assert BS.MOE_PREFILL_RANGES[("vulkan", "nvidia")].low > 1.0 > BS.MOE_PREFILL_RANGES[("vulkan", "amd")].low


def test_a_vulkan_moe_plan_prints_the_range_around_its_priced_figure():
    plan, _ = ask("runlocal check qwen3-30b-a3b --gpu rx-7900-xtx --runtime llama.cpp --backend vulkan")
    low, high = plan.speed["prefill_range_tokens_per_s"]
    assert plan.speed["prefill_tokens_per_s"] is None and "mixture of experts on vulkan" in plan.speed[
        "prefill_not_predicted"]
    rng = BS.MOE_PREFILL_RANGES[("vulkan", "amd")]
    assert math.isclose(high / low, rng.high / rng.low, rel_tol=1e-3)    # one figure × the two ends
    assert f"prefill {low:,.0f}–{high:,.0f} tokens/s (a range, unvalidated" in (speed_phrase(plan) or "")
    step = next(s for s in plan.steps if s.label == "prefill range")
    assert "vulkan_expert_factor" in step.formula and "0.46 … 1.27" in step.formula and "(range)" in step.value


def test_a_rocm_fallback_plan_prints_a_range_a_cuda_or_dense_plan_none():
    plan, _ = ask("runlocal check mixtral-8x7b --gpu 8060s --quant Q6_K --backend rocm")
    low, high = plan.speed["prefill_range_tokens_per_s"]
    assert plan.speed["prefill_tokens_per_s"] is None and math.isclose(high / low, 1.0 / 0.22, rel_tol=1e-3)
    for line in ("runlocal check qwen3-30b-a3b --gpu rtx-4090", "runlocal check llama-3.1-8b --gpu rx-7900-xtx "
                 "--runtime llama.cpp --backend vulkan"):
        plan, _ = ask(line)
        assert plan.speed["prefill_tokens_per_s"] and "prefill_range_tokens_per_s" not in plan.speed


def test_intel_on_vulkan_gets_no_other_vendors_spread():
    """review20b: an Intel card on Vulkan took AMD's spread, worded "AMD's Vulkan MoE prompt rows". The tuning records
    hold no Vulkan MoE prompt row from an Intel card (counted here from the records themselves), so an Arc B580's plan
    prints neither a figure nor a range, and says the prompt is unmeasured there."""
    ratios, pairs = _ratios()
    assert not [r for r, _ in pairs if r.backend == "vulkan" and (r.device.vendor or "").lower() == "intel"]
    assert ("vulkan", "intel") not in ratios and BS.moe_prefill_range("vulkan", "intel") is None
    plan, _ = ask("runlocal check qwen3-30b-a3b --gpu arc-b580 --ram 64G --runtime llama.cpp --backend vulkan")
    assert plan.speed["prefill_tokens_per_s"] is None and "prefill_range_tokens_per_s" not in plan.speed
    step = next(s for s in plan.steps if s.label == "prefill speed")
    assert "nor a range: no Intel card's Vulkan MoE prompt is among the measured rows" in step.formula
    assert "unmeasured here" in step.formula and not any(s.label == "prefill range" for s in plan.steps)
    # why (session 22): the rounds' own logs name the Intel cards whose tables they saw and could not take
    assert "three collection rounds found no public MoE prompt table of a catalog Intel card" in step.formula
    log = (ROOT / "measurements/speed/held_out/moeprefill3_queries.md").read_text()
    assert all(card in log for card in ("Arc Pro B70", "Arc B390", "Arc 140T", "two A770s"))
