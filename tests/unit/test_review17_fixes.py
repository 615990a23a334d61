"""review17 findings 1, 5, 6, 11 and three of 15: the fixes a plan offers, and the words around them."""

from __future__ import annotations

from runlocal.check import CheckRequest, check

GiB = 1 << 30


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def test_no_swap_space_fix_where_the_swap_check_does_not_refuse():
    # review17 finding 5. vLLM refuses swap_space × TP above 70 % of the host's RAM (vllm/config/cache.py
    # verify_with_parallel_config). Here 4 GiB × TP 1 = 4 GiB against 0.7 × 32 GiB = 22.4 GiB: the check passes,
    # so lowering --swap-space changes nothing; the context (the KV pool) is what refuses.
    assert 4 * 1 <= 0.7 * 32
    for ask in (dict(model="llama-3.1-8b", gpu="rtx-4090", runtime="vllm", ctx=131072, ram="32G"),
                dict(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm")):     # CPU-only: no swap space at all
        p = plan(**ask)
        assert p.verdict == "does_not_fit" and p.fixes
        assert not [f.title for f in p.fixes if "swap" in f.title.lower() or "--swap-space" in f.command]
