"""A release between read ones is planned with the nearest read release below it, and the plan's notes say so in one
line, as they say a release above the newest read (review23 finding 8: sglang==0.4.9 was planned with 0.4.8's rules,
said only under --explain; 0.4.9 has been read since, test_sglang_0_4_9.py). The read releases are each module's
READ: SGLang's wheels in measurements/sglang_versions/wheels.txt (0.5.3 and 0.5.5 read, 0.5.4 not; 0.5.21 and 0.5.23, not 0.5.22),
transformers 4.36.0 and 4.45.0 (not 4.40), mlx-lm 0.28.4 and 0.30.7 (not 0.29.0)."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.request import CheckRequest


def notes(runtime: str, gpu: str = "h100", model: str = "qwen2.5-7b") -> list[str]:
    return check(CheckRequest(model=model, gpu=gpu, runtime=runtime, ctx=4096, use_measurements=False))[1]


@pytest.mark.parametrize("runtime, gpu, said", [
    ("sglang==0.5.4", "h100", "SGLang 0.5.4 not read: planned with 0.5.3's rules, the nearest read release below it "
                              "(measurements/sglang_versions/wheels.txt)"),
    ("sglang==0.5.22", "h100", "SGLang 0.5.22 not read: planned with 0.5.21's rules"),
    ("transformers==4.40", "h100", "transformers 4.40 not read: planned with 4.36.0's rules"),
    ("mlx==0.29.0", "m4-pro-24gb", "mlx-lm 0.29.0 not read: planned with 0.28.4's rules"),
])
def test_an_unread_release_is_said(runtime, gpu, said):
    assert sum(n.startswith(said) for n in notes(runtime, gpu)) == 1, notes(runtime, gpu)


@pytest.mark.parametrize("runtime, gpu", [("sglang==0.4.8", "h100"), ("sglang==0.4.9", "h100"), ("sglang", "h100"),
                                          ("transformers==4.36.0", "h100"), ("mlx==0.28.4", "m4-pro-24gb"),
                                          ("vllm==0.9.0", "h100")])
def test_a_read_release_or_a_range_runtime_has_no_such_note(runtime, gpu):
    assert not [n for n in notes(runtime, gpu) if " not read: planned with " in n]
