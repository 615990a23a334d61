"""review19 section 13: a fix that moves layers to RAM gives up speed (cost 3), so its decode figure is always said,
however small the change: gemma-3-12b on an RTX 4070 at 32k, 'Keep 48 of 49 layers on the GPU' had none (the
figure appeared only where decode moved 5 % or more).

Since review22 #9 layers in RAM are tight whoever placed them, so such a fix no longer turns a tight plan into a
fitting one and is offered where the plan does not start: with -ngl 49 asked (no --fit) at 65,536 tokens, past the
49,920 every layer on the 12 GB card holds."""

from __future__ import annotations

import re

from runlocal.check import CheckRequest, check


def test_every_layer_moving_fix_says_its_decode():
    p, _ = check(CheckRequest(model="gemma-3-12b", gpu="rtx-4070", ctx=65536, n_gpu_layers=49,
                              use_measurements=False))
    assert p.verdict == "does_not_fit"
    moving = [f for f in p.fixes if "layers on the GPU, the rest in RAM" in f.title]
    assert moving
    for f in moving:
        m = re.search(r"then ([\d.]+) tokens/s decode", f.effect)
        assert m and float(m.group(1)) > 0, f.effect


def test_a_tight_plan_is_not_offered_layers_in_ram_as_an_improvement():
    # --fit keeps every layer on the GPU at 32k (above 90 %: tight); moving one to RAM is tight as well, and slower
    p, _ = check(CheckRequest(model="gemma-3-12b", gpu="rtx-4070", ctx=32768, use_measurements=False))
    assert p.verdict == "tight" and p.fixes
    assert not [f for f in p.fixes if "layers on the GPU, the rest in RAM" in f.title]
