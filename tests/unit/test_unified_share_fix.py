"""Strix Halo planned at Linux's default GPU share offers the fix every Strix Halo guide makes first (review17b #6):
raise the ttm module's pages_limit. Checked against sources outside the fix's code: the kernel counts pages_limit in
4 KiB pages (AMD's amd-ttm tool: 100 GB → 26,214,400 pages, superm1/amd-debug-tools docs/amd-ttm.md); the public 128 GB
setups raise it to 120 GiB, `options ttm pages_limit=31457280` (whylucian softab's hardware-specs; lhl/strix-halo-
testing: "allocate 120GB of memory as GTT"), which is 120 × 2^30 / 4096 (review22 #11: the raise was 96 GiB, 3/4);
and the fix's claim ("tight → fits") is asked again of the planner through --vram, the way a user states a raised
share."""

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
    assert "pages_limit=31457280" in fix.command and 31457280 == 120 * 2**30 // 4096
    assert fix.effect.startswith("GPU share 64 GiB → 120 GiB of 128 GiB, 8 GiB left to the OS")
    assert "verdict tight → fits" in fix.effect
    # the same machine with the raised share stated: the planner's own answer agrees with the fix's
    raised, _ = _plan(model="glm-4.5-air", gpu=STRIX, ctx=32768, vram="120G")
    assert raised.verdict == "fits"


@pytest.mark.parametrize("kw", [dict(gpu="m4-max-128gb"), dict(gpu="dgx-spark"), dict(gpu=STRIX, vram="80G"),
                                dict(gpu="rtx-4090", ram="64G")])
def test_no_share_fix_off_amd_apus_or_where_the_share_was_given(kw):
    plan, _ = _plan(model="glm-4.5-air", ctx=32768, **kw)
    assert _share_fix(plan) is None


@pytest.mark.parametrize("device_id, gib", [
    ("ryzen-ai-max-395-128gb", 120),   # 128 − 8 (the public 120 GiB setups)
    ("ryzen-ai-max-395-64gb", 56),     # 64 − 8 = 56 > 3/4 × 64 = 48
    ("radeon-780m-16gb", 12),          # 16 − 8 = 8 < 3/4 × 16 = 12: a small laptop keeps the 3/4 raise
])
def test_the_raise_is_the_ram_less_8_gib_and_at_least_three_quarters(device_id, gib):
    from runlocal.hardware.catalog import find_device
    from runlocal.hardware.unified_memory import raised_gpu_share

    dev = find_device(device_id)
    assert raised_gpu_share(dev, dev.gpu_usable_bytes) == gib * 2**30
