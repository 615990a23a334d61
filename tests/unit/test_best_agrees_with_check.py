"""review17 finding 9: `best` ranked a pinned -ngl plan (gpt-oss-120b on 2 × R9700: 115 tok/s, 99 % full) that `check`
never makes, and its table hid the verdict. Now each row is the plan check makes for that device and request (--fit
places the layers), so its verdict, speeds and command are check's, and the table shows the verdict."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.choose import best
from runlocal.hardware.catalog import load_devices
from runlocal.model.catalog import lookup
from runlocal.render.choose_text import render_best


@pytest.mark.parametrize("alias, dev, count, ctx", [("gpt-oss-120b", "radeon-ai-pro-r9700", 2, 8192),
                                                    ("qwen3-30b-a3b", "rtx-4090", 1, 32768)])
def test_a_best_row_is_checks_plan_for_that_device(alias, dev, count, ctx):
    device = next(d for d in load_devices() if d.id == dev)
    res = best(lookup(alias), ctx=ctx, devices=[device], counts=(count,))
    (row,) = res.ranked + res.unpriced
    plan, _ = check(CheckRequest(model=alias, gpu=f"{count}x{dev}" if count > 1 else dev, ctx=ctx,
                                 use_measurements=False))
    assert row["verdict"] == plan.verdict
    assert row["decode_tokens_per_s"] == plan.speed.get("decode_tokens_per_s")
    assert row["prefill_tokens_per_s"] == plan.speed.get("prefill_tokens_per_s")
    assert row["command"] == plan.command
    if res.ranked:        # the table ranks priced rows: its verdict column says check's word
        lines = render_best(res.to_dict()).splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("#"))
        at = lines[header].index("verdict")
        assert lines[header + 2][at:].split()[0] == plan.verdict
