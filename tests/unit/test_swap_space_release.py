"""vLLM's --swap-space and its RAM check exist up to v0.17.1 only (vllm/config/cache.py verify_with_parallel_config;
PR #36216 removed the field, the flag and the check in v0.18.0). The lever lives where that rule is: the plan's "host
swap space" step (runtimes/vllm_swap.py), which only a release that has the check makes — no generic Levers field
(base.Levers had host_swap="swap_space" on every vLLM release's levers). By hand, a 32B AWQ on 2 × 16 GB with 8 GiB of
RAM on 0.17.1: 4 GiB × TP 2 = 8 GiB > 0.7 × 8 GiB = 5.6 GiB → "Too large swap space"; the largest whole n with
n GiB × 2 ≤ 5.6 GiB is 2 (3 × 2 = 6 > 5.6)."""

from __future__ import annotations

from dataclasses import fields

from runlocal.check import CheckRequest, check
from runlocal.runtimes.base import Levers


def _fixes(runtime):
    plan, _ = check(CheckRequest(model="qwen2.5-32b", quant="awq", runtime=runtime, gpu="2x4060-ti-16gb", ram="8G",
                                 ctx=16384, use_measurements=False))
    return plan, [f.title for f in plan.fixes]


def test_no_generic_swap_lever():
    assert not any("swap" in f.name for f in fields(Levers))


def test_the_swap_fix_is_the_0_17_1_check_and_only_there():
    plan, titles = _fixes("vllm==0.17.1")
    assert any(st.label == "host swap space" for st in plan.allocation.steps)
    assert titles[0] == "Lower the CPU swap space to 2 GiB per GPU (--swap-space 2)"
    assert 2 * 2 <= 0.7 * 8 < 3 * 2
    current, titles = _fixes("vllm")
    assert not any(st.label == "host swap space" for st in current.allocation.steps)
    assert not any("swap" in t.lower() for t in titles) and "--swap-space" not in current.command
