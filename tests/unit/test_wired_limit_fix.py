"""review19 finding 11: a Mac planned at macOS's default GPU working set gets the fix that raises it,
`sudo sysctl iogpu.wired_limit_mb=N` (mlx-lm README, "Large Models": N larger than the model, smaller than the RAM),
N the smallest whole GiB that makes the plan fit, leaving macOS at least OS_FLOOR (8 GiB) of the RAM."""

from __future__ import annotations

import math

from runlocal.check import CheckRequest, check

GiB = 1 << 30


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def test_a_tight_plan_on_a_48_gb_mac_gets_the_smallest_working_set_that_fits():
    p = plan(model="qwen3-32b", quant="Q8_0", gpu="m4-pro-48gb", ctx=8192)
    gpu = p.allocation.devices[0]
    # macOS's default working set on a 48 GB Mac: 3/4 of the RAM (hardware/unified_memory.py's logged values)
    assert gpu.capacity == 48 * GiB * 3 // 4 == 36 * GiB
    assert p.verdict == "tight" and gpu.total > 0.9 * gpu.capacity
    fix = next(f for f in p.fixes if "iogpu.wired_limit_mb" in f.title)
    # by hand: the smallest whole GiB N with the GPU side under 90 % of it is ceil(total / 0.9 GiB)
    n = math.ceil(gpu.total / 0.9 / GiB)
    assert n == 38 and 48 - n >= 8
    assert f"iogpu.wired_limit_mb={n * 1024}" in fix.title
    assert fix.command.startswith(f"sudo sysctl iogpu.wired_limit_mb={n * 1024} && llama-server ")
    assert "10 GiB left to macOS" in fix.effect


def test_no_raise_where_the_ram_leaves_macos_nothing_above_the_default():
    # a 24 GB Mac: default working set 2/3 × 24 = 16 GiB = 24 − 8 (OS_FLOOR): no N both above the default and
    # leaving macOS 8 GiB, so no such fix (MLX's own rule already runs up to RAM − 8 GiB past the working set)
    assert 24 * 2 // 3 == 24 - 8
    p = plan(model="qwen3-32b", gpu="m4-pro-24gb", runtime="mlx", ctx=4096)
    assert p.verdict == "does_not_fit"
    assert not [f for f in p.fixes if "iogpu" in f.command]
