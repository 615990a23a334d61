"""Strix Halo planned at Linux's default GPU share offers the fix every Strix Halo guide makes first (review17b #6):
raise the ttm module's pages_limit. Checked against sources outside the fix's code: the kernel counts pages_limit in
4 KiB pages (AMD's amd-ttm tool: 100 GB → 26,214,400 pages, superm1/amd-debug-tools docs/amd-ttm.md), so 96 GiB is
96 × 2^30 / 4096 = 25,165,824 pages; AMD's Variable Graphics Memory gives the GPU up to 96 GB of 128 GB; and the
fix's claim ("tight → fits") is asked again of the planner through --vram, the way a user states a raised share."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check

STRIX = "ryzen-ai-max-395-128gb"


def _plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))


def _share_fix(plan):
    return next((f for f in plan.fixes if "ttm pages_limit" in f.title), None)


def test_glm_air_on_strix_halo_gets_the_share_fix_with_its_effect():
    plan, notes = _plan(model="glm-4.5-air", gpu=STRIX, ctx=32768)
    assert plan.verdict == "tight"
    assert any("Linux's default GTT limit" in n and "64.0 of 128 GiB" in n for n in notes)
    fix = _share_fix(plan)
    assert fix is not None, [f.title for f in plan.fixes]
    assert "pages_limit=25165824" in fix.command and 25165824 == 96 * 2**30 // 4096
    assert fix.effect.startswith("GPU share 64 GiB → 96 GiB of 128 GiB; verdict tight → fits")
    # the same machine with the raised share stated: the planner's own answer agrees with the fix's
    raised, _ = _plan(model="glm-4.5-air", gpu=STRIX, ctx=32768, vram="96G")
    assert raised.verdict == "fits"


@pytest.mark.parametrize("kw", [dict(gpu="m4-max-128gb"), dict(gpu="dgx-spark"), dict(gpu=STRIX, vram="80G"),
                                dict(gpu="rtx-4090", ram="64G")])
def test_no_share_fix_off_amd_apus_or_where_the_share_was_given(kw):
    plan, _ = _plan(model="glm-4.5-air", ctx=32768, **kw)
    assert _share_fix(plan) is None
