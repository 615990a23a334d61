"""SGLang's tensor-parallel balance check (review20 finding 1): model_runner.py init_torch_distributed, in 0.4.x and
0.5.x alike, stops with "The memory capacity is unbalanced. Some GPUs may be occupied by other processes." where, with
tp_size > 1, the least free memory over the ranks is under 0.9 × a rank's own (sgl-project/sglang#4233)."""

from __future__ import annotations

from runlocal.check import CheckRequest, check

WORDS = "The memory capacity is unbalanced. Some GPUs may be occupied by other processes."


def plan(gpu: str, **kw):
    return check(CheckRequest(model="qwen3-8b", gpu=gpu, runtime="sglang", ctx=8192, use_measurements=False, **kw))[0]


def test_a_3090_beside_a_3060_is_refused_in_sglangs_words_in_either_order():
    """By hand: free before loading = card − CUDA context (0.61 GiB) − TP init (2.01 GiB): RTX 3060 11.75 − 2.62 =
    9.13 GiB, RTX 3090 23.58 − 2.62 = 20.96 GiB; 9.13 < 0.9 × 20.96 = 18.86, so the 3090's rank stops."""
    for order in ("rtx-3090,rtx-3060", "rtx-3060,rtx-3090"):
        p = plan(order)
        assert p.verdict == "does_not_fit"
        assert (p.allocation.refusal or "").startswith(WORDS)
        assert "9.13 GiB free, under 0.9 × the 20.96 GiB" in p.allocation.refusal
        assert "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0" in p.allocation.refusal


def test_cards_within_a_tenth_of_each_other_pass():
    # RTX 4090 23.64 GiB and RTX 3090 23.58 GiB: 21.02 vs 20.96 GiB free, a ratio of 0.997 ≥ 0.9
    for pair in ("rtx-4090,rtx-3090", "2x3060"):
        assert WORDS not in (plan(pair).allocation.refusal or "")


def test_two_cards_of_one_name_with_different_vram_are_checked_per_rank():
    """review20b finding 3: the check compares each rank's free memory (get_available_gpu_memory), so a 3090 of which
    12 GiB may be used beside one of 24 GiB is refused in either order. By hand: 12 − 0.61 − 2.01 = 9.38 GiB free,
    24 − 2.62 = 21.38 GiB; 9.38 < 0.9 × 21.38 = 19.24."""
    for vram, small in (("12G,24G", 0), ("24G,12G", 1)):
        p = plan("2x3090", vram=vram)
        assert (p.allocation.refusal or "").startswith(WORDS)
        assert f"rank {small} (NVIDIA GeForce RTX 3090) has 9.38 GiB free, under 0.9 × the 21.38 GiB" \
            in p.allocation.refusal


def test_two_cards_of_one_name_and_one_vram_pass():
    assert WORDS not in (plan("2x3090", vram="20G,20G").allocation.refusal or "")
