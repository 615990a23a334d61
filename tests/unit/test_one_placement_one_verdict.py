"""review22 #9: one placement, one verdict. `check qwen3-30b-a3b --gpu rtx-4060` was tight (--fit put experts in
system memory) while its own printed command, checked, was "fits" for the same process: the same 6.41 GiB on the GPU,
the same experts in RAM, the same decode. A GPU plan holding layers or routed experts in system memory is tight
whoever placed them (docs/check-reference.md's tight, which names "layers or experts in RAM" among what is given up):
the speed given up is the placement's, not the chooser's."""

from __future__ import annotations

import re

from runlocal.check import check
from runlocal.request import CheckRequest


def _flag(command: str, name: str) -> int:
    m = re.search(rf"(?:^| ){re.escape(name)} (\d+)", command)
    assert m, (name, command)
    return int(m.group(1))


def test_the_printed_command_checked_gets_the_default_plans_verdict():
    default, _ = check(CheckRequest(model="qwen3-30b-a3b", gpu="rtx-4060"))
    # the command llama-server is told to run (what review22 pasted back): -c, -ngl and --n-cpu-moe read from its text
    ctx, ngl, ncmoe = (_flag(default.command, f) for f in ("-c", "-ngl", "--n-cpu-moe"))
    # the model has 48 blocks (+ the output layer = 49 for -ngl); an 8 GB card cannot hold 17 GiB of Q4_K_M experts,
    # so some are in RAM: 0 < --n-cpu-moe ≤ 48
    assert ngl == 49 and 0 < ncmoe <= 48
    pasted, _ = check(CheckRequest(model="qwen3-30b-a3b", gpu="rtx-4060", ctx=ctx, n_gpu_layers=ngl, n_cpu_moe=ncmoe))
    assert [d.total for d in pasted.allocation.devices] == [d.total for d in default.allocation.devices]
    assert default.verdict == pasted.verdict == "tight"


def test_layers_asked_into_ram_are_tight_all_on_the_gpu_is_not():
    # gemma-3-12b has 48 blocks: -ngl 48 leaves the output layer on the CPU (src/llama-model.cpp: the output is
    # offloaded only when -ngl > n_layer), -ngl 49 puts everything on the GPU. 12B Q4_K_M (~7 GiB) at 8K on a 12 GB
    # RTX 4070 is under 90 % either way, so only the placement can make the first tight.
    some, _ = check(CheckRequest(model="gemma-3-12b", gpu="rtx-4070", ctx=8192, n_gpu_layers=48))
    every, _ = check(CheckRequest(model="gemma-3-12b", gpu="rtx-4070", ctx=8192, n_gpu_layers=49))
    gpu = next(d for d in every.allocation.devices if d.kind != "cpu")
    assert gpu.total < 0.9 * gpu.capacity
    assert (some.verdict, every.verdict) == ("tight", "fits")


def test_layers_asked_into_ram_get_the_all_on_gpu_fix_the_fit_case_gets():
    # the same fix --fit's placement gets (fixes._all_layers_on_gpu): -ngl 49 puts gemma-3-12b's 48 blocks and its
    # output layer on the GPU, which the 12 GB card holds under 90 % (the test above)
    some, _ = check(CheckRequest(model="gemma-3-12b", gpu="rtx-4070", ctx=8192, n_gpu_layers=48))
    fix = next(f for f in some.fixes if f.title.startswith("Keep every layer on the GPU"))
    assert "-ngl 49" in fix.command and "verdict tight → fits" in fix.effect
