"""hardware/ubatch_speed.py: MMQ launches per micro-batch, counted by hand from mmq.cuh launch_mul_mat_q's rule.

The rule (ggml-cuda mmq.cuh): a tile is 128 weight rows × 128 token columns (U >= 128); ntiles = ceil(rows/128) ×
ceil(U/128); waves = ceil(ntiles/nsm); efficiency = floor(100·ntiles / (nsm·waves)); >= 90 % → one block per tile
(tiled), else stream-k over nsm blocks.
"""

import pytest

from runlocal.hardware.catalog import find_device
from runlocal.hardware.ubatch_speed import (
    applies,
    count_launches,
    launch_kind,
    mmq_matrices,
    ubatch_term,
    with_term,
)
from runlocal.model.catalog import lookup

# Llama-3.1-8B, one layer, (rows, K) of each matmul (config.json: hidden 4096, 8 KV heads × 128, intermediate 14336)
LLAMA_LAYER = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]


def test_catalog_shapes_are_the_hand_written_ones():
    m = mmq_matrices(lookup("llama-3.1-8b"))
    assert len(m) == 7 * 32         # q k v o gate up down in each of 32 layers; embedding and output head excluded
    assert sorted(m[:7]) == sorted((r, k, 1) for r, k in LLAMA_LAYER)


def test_rtx_4090_llama_8b_by_hand():
    # RTX 4090: 128 SMs (Ada whitepaper: AD102 full 144, the 4090 enables 128)
    assert find_device("rtx-4090").sm_count == 128
    nsm = 128
    # U = 256 → 2 column tiles. q, o, down: 32 row tiles → 64 tiles, 1 wave, 100·64/128 = 50 % → stream-k.
    # k, v: 8 → 16 tiles, 12 % → stream-k. gate, up: 112 → 224 tiles, 2 waves, 100·224/256 = 87 % → stream-k.
    # All 7 stream-k, × 32 layers = 224.
    u256 = count_launches([(r, k, 1) for r, k in LLAMA_LAYER] * 32, 256, nsm)
    assert (u256.stream_k, u256.tiled, u256.idle_flops) == (224, 0, 0.0)
    # U = 512 → 4 column tiles. q, o, down: 128 tiles = 1 full wave, 100 % → tiled, no idle SM.
    # k, v: 32 tiles, 25 % → stream-k. gate, up: 448 tiles, 4 waves, 100·448/512 = 87 % → stream-k.
    u512 = count_launches([(r, k, 1) for r, k in LLAMA_LAYER] * 32, 512, nsm)
    assert (u512.stream_k, u512.tiled, u512.idle_flops) == (4 * 32, 3 * 32, 0.0)
    # the term at 256 with a 34 µs launch: 224 × 34 / 256 − 128 × 34 / 512 = 29.75 − 8.5 = 21.25 µs per token
    term = ubatch_term(lookup("llama-3.1-8b"), 256, nsm, flops_per_s=1e15, launch_us=34.0)
    assert term.seconds_per_token * 1e6 == pytest.approx(21.25)


def test_h100_tiled_launches_leave_idle_sms():
    # H100 SXM: 132 SMs. U = 512: q, o, down have 128 tiles → 1 wave, 100·128/132 = 96 % → tiled, 4 SMs idle for one
    # tile (2·128·128·K FLOPs each): 4 · 2 · 16384 · (4096 + 4096 + 14336) per layer.
    assert find_device("h100-sxm").sm_count == 132
    c = count_launches([(r, k, 1) for r, k in LLAMA_LAYER], 512, 132)
    assert (c.stream_k, c.tiled) == (4, 3)
    assert c.idle_flops == 4 * 2 * 16384 * (4096 + 4096 + 14336)
    # U = 128: one column tile; q has 32 tiles (24 %) and gate 112 (84 %): every launch is stream-k
    assert count_launches([(r, k, 1) for r, k in LLAMA_LAYER], 128, 132).stream_k == 7


def test_launch_kind_threshold():
    assert launch_kind(119, 132) == (False, 13)     # 100·119/132 = 90.15 → 90 % → tiled, 13 idle
    assert launch_kind(118, 132) == (True, 0)       # 89 % → stream-k
    assert launch_kind(264, 132) == (False, 0)      # two full waves


def test_zero_at_512_and_scope():
    m = lookup("llama-3.1-8b")
    assert ubatch_term(m, 512, 82, 1e14).seconds_per_token == 0.0
    assert not applies("cuda", "nvidia", False, "8.9", 128)         # F16/BF16: cuBLAS, not MMQ
    assert not applies("cuda", "nvidia", True, "7.0", 80)           # V100: cuBLAS for large batches
    assert not applies("vulkan", "nvidia", True, "8.9", 128)
    assert applies("cuda", "nvidia", True, "8.6", 82)


def test_with_term_adds_seconds_per_token():
    term = ubatch_term(lookup("llama-3.1-8b"), 256, 128, 1e15, launch_us=34.0)
    # 10,000 tokens/s is 100 µs a token; + 21.25 µs → 1 / 121.25 µs
    assert with_term(10_000.0, term) == pytest.approx(1e6 / 121.25)
    assert with_term(None, term) is None
