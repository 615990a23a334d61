"""review19 section 13: a fix that moves layers to RAM gives up speed (cost 3), so its decode figure is always said,
however small the change: gemma-3-12b on an RTX 4070 at 32k, 'Keep 48 of 49 layers on the GPU' had none (the
figure appeared only where decode moved 5 % or more)."""

from __future__ import annotations

import re

from runlocal.check import CheckRequest, check


def test_every_layer_moving_fix_says_its_decode():
    p, _ = check(CheckRequest(model="gemma-3-12b", gpu="rtx-4070", ctx=32768, use_measurements=False))
    moving = [f for f in p.fixes if "layers on the GPU, the rest in RAM" in f.title]
    assert moving
    for f in moving:
        m = re.search(r"decode ([\d.]+) → ([\d.]+) tokens/s", f.effect)
        assert m, f.effect
        assert float(m.group(1)) == round(p.speed["decode_tokens_per_s"], 1)
