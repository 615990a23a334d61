"""vLLM on two cards of different sizes (review20 finding 1). Every rank takes gpu_memory_utilization of its own card
(vllm/v1/worker/gpu_worker.py init_device: requested_memory = total_memory × gpu_memory_utilization), and the engine
gives every rank the smallest rank's number of blocks (vllm/v1/core/kv_cache_utils.py unify_kv_cache_configs, later
get_kv_cache_configs: "change the num_blocks of each rank to the smallest among all ranks"). So an RTX 3090 + RTX
3060 holds what two RTX 3060s hold, whichever is named first."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.units import GiB


def plan(gpu: str, ctx: int):
    return check(CheckRequest(model="qwen3-8b", gpu=gpu, runtime="vllm", ctx=ctx, use_measurements=False))[0]


def test_the_pool_is_the_smaller_cards_in_either_order():
    first_big, first_small, two_small = (plan(g, 8192) for g in ("rtx-3090,rtx-3060", "rtx-3060,rtx-3090", "2x3060"))
    assert first_big.allocation.kv_cache_tokens == first_small.allocation.kv_cache_tokens \
        == two_small.allocation.kv_cache_tokens
    assert first_big.verdict == first_small.verdict != "does_not_fit"
    # each card is shown with its own capacity and the same KV blocks
    gpus = [d for d in first_big.allocation.devices if d.kind == "gpu"]
    assert sorted(round(d.capacity / GiB, 2) for d in gpus) == [11.75, 23.58]
    assert len({d.kv_cache for d in gpus}) == 1
    step = next(st for st in first_big.allocation.steps if st.label == "smallest rank")     # --explain says which
    assert step.value == "rank 1 (NVIDIA GeForce RTX 3060 12GB)"   # rtx-3090 is rank 0


def test_the_refusal_and_the_largest_context_come_from_the_3060():
    """By hand, from the 3060 rank: 0.92 × 11.75 GiB = 10.81 GiB budget; less 7.63 GiB of weights per rank (16.4 GB of
    BF16 over TP 2), 1.39 GiB of profiled activation, 0.89 GiB non-torch + graphs leaves ≈ 0.90 GiB; Qwen3-8B's KV per
    token per rank is 36 layers × 2 × 4 KV heads (8 / TP 2) × 128 × 2 B = 72 KiB, so ≈ 0.90 GiB / 72 KiB ≈ 13.1k
    tokens: 8k starts and 16k does not."""
    p = plan("rtx-3090,rtx-3060", 16384)
    assert p.verdict == "does_not_fit"
    assert p.allocation.kv_bytes_per_token == 36 * 2 * 4 * 128 * 2
    assert 12_800 <= p.allocation.kv_cache_tokens <= 13_400
    assert p.max_context == p.allocation.kv_cache_tokens < 16384
    assert f"largest max_model_len that fits is {p.max_context:,}" in (p.allocation.refusal or "")


def plan_vram(vram: str, ctx: int = 8192):
    return check(CheckRequest(model="llama-3.1-8b", gpu="2x3090", vram=vram, runtime="vllm", ctx=ctx,
                              use_measurements=False))[0]


def test_two_cards_of_one_name_with_different_vram_hold_what_the_smaller_holds_in_either_order():
    """review20b finding 2: --vram beside a catalog GPU is the memory each card may use, so 2x3090 at 12G,24G is a
    12 GiB rank and a 24 GiB rank; every rank gets the smallest rank's blocks, which is what two 12 GiB ranks hold
    (unify_kv_cache_configs). Before, the pool was keyed by card name and 12G,24G took the 24 GiB card's pool."""
    small_first, big_first, both_small = plan_vram("12G,24G"), plan_vram("24G,12G"), plan_vram("12G,12G")
    assert small_first.allocation.kv_cache_tokens == big_first.allocation.kv_cache_tokens \
        == both_small.allocation.kv_cache_tokens
    assert small_first.verdict == big_first.verdict == both_small.verdict
    small_step, big_step = (next(st for st in p.allocation.steps if st.label == "smallest rank")
                            for p in (small_first, big_first))
    assert small_step.value.startswith("rank 0 ")
    assert big_step.value.startswith("rank 1 ")


def test_two_equal_cards_show_no_smallest_rank_step():
    # contrast: one card size, one budget; nothing to choose between
    assert not any(st.label == "smallest rank" for st in plan_vram("24G,24G").allocation.steps)


def test_decode_waits_for_the_slower_card():
    """Tensor parallel reads 1/TP of every layer on each rank and all-reduces after it, so each step waits for the
    slowest rank (fixes20a's noticed-and-left: the first GPU's 936 GB/s was used). By hand for llama-3.1-8b BF16 at
    -c 8192 (KV read at 4,096: 15.01 GB of weights + 0.54 GB of KV, the plan's own byte counts), on the RTX 3060's
    360 GB/s (catalog: 192-bit GDDR6 at 15 Gbps) at the fit's 0.75 share, TP 2 × 0.85, 32 layers × 50 µs:
      15.55e9 / (0.75 × 360e9 × 1.7) = 0.033878 s; + 32 × 50e-6 = 0.035478 s → 28.2 tokens/s, whichever card is first."""
    for gpu in ("rtx-3090,rtx-3060", "rtx-3060,rtx-3090"):
        p = check(CheckRequest(model="llama-3.1-8b", gpu=gpu, runtime="vllm", ctx=8192, use_measurements=False))[0]
        assert round(p.speed["decode_tokens_per_s"], 1) == 28.2
        step = next(st for st in p.steps if st.label == "decode speed")
        assert "0.75 × 360.0 GB/s, the slowest rank, × 2×0.85" in step.formula


def test_batch_defaults_come_from_device_0_for_every_rank():
    """vLLM reads its scheduler defaults once, on device 0 (engine/arg_utils.py: "device_memory =
    current_platform.get_device_total_memory()", Platform.get_device_total_memory(cls, device_id: int = 0); ≥ 70 GiB
    and not an A100 → max_num_batched_tokens 8192, max_num_seqs 1024, else 2048 / 256), and every rank profiles with
    them. So an H100 80GB listed first gives both ranks 8192 / 1024 — before, the RTX A6000's rank profiled at its own
    2048 / 256 and, having the smaller pool, set the plan's — and an RTX A6000 first gives 2048 / 256."""
    def assumed(gpu: str) -> set[str]:
        p = check(CheckRequest(model="llama-3.1-8b", gpu=gpu, runtime="vllm", ctx=8192, use_measurements=False))[0]
        return {a for a in p.allocation.assumptions if a.startswith(("max_num_batched_tokens", "max_num_seqs"))}

    assert assumed("h100,a6000") == {"max_num_batched_tokens 8192", "max_num_seqs 1024"}
    assert assumed("a6000,h100") == {"max_num_batched_tokens 2048", "max_num_seqs 256"}
