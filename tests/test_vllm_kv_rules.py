"""vLLM's KV-pool rules, one by one, as vllm/v1/core/kv_cache_utils.py and kv_cache_interface.py state them.

Expected values are worked out here from the rule (page = 16 tokens × bytes per token of a layer; blocks =
available // page // layers per group; ...), not read from the planner; tests/test_runtime_vllm.py checks
the same rules against the logged figures.
"""
from __future__ import annotations

import pytest

from runlocal.model.catalog import lookup
from runlocal.plan import estimate
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.vllm import (BLOCK_SIZE, CONCURRENCY_REPORT_ENGINES, ENGINES, UNIFIED_KV_ENGINES, VLLM, GiB,
                                    KVGroup, activation_bytes, budget_split, kv_groups, kv_pool)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


GEMMA3_1B = lookup("gemma-3-1b")     # 26 layers: 22 sliding (window 512) + 4 full, 1 KV head × 256, bf16


def test_gemma3_1b_layer_types():
    groups = {(g.kind, g.window): g for g in kv_groups(GEMMA3_1B, "f16", "f16")}
    assert groups[("sliding", 512)].layers == 22 and groups[("full", None)].layers == 4
    assert all(g.bytes_per_token == 2 * 1 * 256 * 2 for g in groups.values())


def test_engines_by_generation():
    assert ENGINES == ("v0.6", "v0", "v1-pre-hybrid", "v1", "v1-cudagraph")
    assert set(UNIFIED_KV_ENGINES) == {"v0.6", "v0", "v1-pre-hybrid"}
    assert CONCURRENCY_REPORT_ENGINES == ("v1-cudagraph",)
    with pytest.raises(ValueError):
        kv_pool(GiB, kv_groups(GEMMA3_1B, "f16", "f16"), 4096, 2048, "v2")


@pytest.mark.parametrize("engine", UNIFIED_KV_ENGINES)
def test_before_the_hybrid_manager_sliding_layers_are_sized_like_full_ones(engine):
    """unify_hybrid_kv_cache_specs / V0's CacheEngine: one group of all 26 layers, a block of 16 tokens costs
    26 pages; concurrency = tokens / max_model_len."""
    groups = kv_groups(GEMMA3_1B, "f16", "f16")
    page_all_layers = 26 * 1024 * BLOCK_SIZE
    pool = kv_pool(1000 * page_all_layers + 5, groups, 32768, 2048, engine)
    assert pool.num_blocks == 1000 and pool.tokens == 16000 and pool.groups == 1
    assert pool.max_concurrency == pytest.approx(16000 / 32768)


@pytest.mark.parametrize("engine", ["v1", "v1-cudagraph"])
def test_hybrid_manager_groups_layers_by_the_smallest_type(engine):
    """_get_kv_cache_groups_uniform_page_size: 22 sliding + 4 full → group size 4 (22 ≥ 1.5 × 4), the sliding
    type split into ⌈22 / 4⌉ = 6 groups (the last padded by 2 layers), 7 groups in all; a block costs 4 pages;
    a request needs ⌈L / 16⌉ blocks in the full group and ⌈min(511 + batched, L) / 16⌉ + 1 in each sliding one."""
    groups = kv_groups(GEMMA3_1B, "f16", "f16")
    page = 1024 * BLOCK_SIZE
    avail = 10 * GiB
    pool = kv_pool(avail, groups, 32768, 2048, engine)
    blocks = avail // page // 4
    need = _cdiv(32768, 16) + 6 * (_cdiv(min(512 - 1 + 2048, 32768), 16) + 1)
    assert (pool.group_size, pool.groups, pool.bytes_per_block) == (4, 7, 4 * page)
    assert pool.num_blocks == blocks and pool.blocks_per_request == need == 2048 + 6 * 161
    assert pool.max_concurrency == pytest.approx(blocks / need)


def test_hybrid_sliding_span_is_capped_by_max_model_len():
    groups = kv_groups(GEMMA3_1B, "f16", "f16")
    pool = kv_pool(GiB, groups, 1024, 8192, "v1")
    # min(511 + 8192, 1024) = 1024 tokens: 64 blocks + 1 in each sliding group, 64 in the full one
    assert pool.blocks_per_request == 64 + 6 * 65


def test_group_size_is_the_larger_count_when_within_1_5x():
    """12 sliding + 13 full (gpt-oss-20b with an EAGLE layer): groups of 13, one padding layer, 2 groups."""
    groups = [KVGroup("sliding", 12, 2048, 128), KVGroup("full", 13, 2048)]
    pool = kv_pool(GiB, groups, 8192, 2048, "v1")
    assert (pool.group_size, pool.groups) == (13, 2)
    assert pool.num_blocks == GiB // (2048 * 16) // 13
    assert pool.blocks_per_request == _cdiv(8192, 16) + _cdiv(min(127 + 2048, 8192), 16) + 1


def test_group_size_is_the_smaller_count_for_an_n_to_1_pattern():
    m = lookup("gemma-3-12b")              # 40 sliding (window 1024) + 8 full
    pool = kv_pool(GiB, kv_groups(m, "f16", "f16"), 131072, 2048, "v1")
    assert (pool.group_size, pool.groups) == (8, 5 + 1)


def test_smaller_page_gets_a_proportionally_larger_block():
    """unify_kv_cache_spec_page_size: a sliding layer of half the bytes per token stores 32 tokens per block,
    so that its page equals the full layer's 16-token page."""
    groups = [KVGroup("sliding", 8, 2048, 1024), KVGroup("full", 8, 4096)]
    pool = kv_pool(GiB, groups, 65536, 2048, "v1")
    page = 4096 * 16
    assert pool.num_blocks == GiB // page // 8
    assert pool.blocks_per_request == _cdiv(65536, 16) + _cdiv(min(1023 + 2048, 65536), 32) + 1
    # "GPU KV cache size" (up to v0.20): blocks // groups × the smallest block size
    assert pool.tokens == pool.num_blocks // 2 * 16


def test_reported_tokens_by_version():
    """_report_kv_cache_config: blocks // groups × 16 (v0.19), int(max_concurrency × max_model_len) (v0.21+)."""
    groups = kv_groups(GEMMA3_1B, "f16", "f16")
    old = kv_pool(10 * GiB, groups, 32768, 2048, "v1")
    new = kv_pool(10 * GiB, groups, 32768, 2048, "v1-cudagraph")
    assert old.num_blocks == new.num_blocks and old.max_concurrency == new.max_concurrency
    assert old.tokens == old.num_blocks // 7 * 16
    assert new.tokens == int(new.max_concurrency * 32768)
    # one group of full attention: both formulas give blocks × 16 when max_model_len is a multiple of 16
    (full,) = kv_groups(lookup("qwen3-14b"), "f16", "f16")
    a = kv_pool(10 * GiB, [full], 32768, 2048, "v1")
    b = kv_pool(10 * GiB, [full], 32768, 2048, "v1-cudagraph")
    assert a.tokens == b.tokens == a.num_blocks * 16


def test_sliding_only_model_is_one_group_holding_its_window():
    """UniformTypeKVCacheSpecs: every layer sliding with one window is one group; a request needs the window's
    blocks only (V1 with the hybrid manager); before it, the whole context."""
    groups = [KVGroup("sliding", 32, 4096, 4096)]
    pool = kv_pool(GiB, groups, 32768, 2048, "v1")
    assert pool.groups == 1 and pool.num_blocks == GiB // (32 * 4096 * 16)
    assert pool.blocks_per_request == _cdiv(4095 + 2048, 16) + 1
    old = kv_pool(GiB, groups, 32768, 2048, "v1-pre-hybrid")
    assert old.max_concurrency == pytest.approx(old.num_blocks * 16 / 32768)


def test_block_count_override_keeps_the_per_request_arithmetic():
    groups = kv_groups(GEMMA3_1B, "f16", "f16")
    pool = kv_pool(0, groups, 32768, 2048, "v1", num_blocks=3014 * 5)
    assert pool.max_concurrency == pytest.approx(5.0)


# --- V0 with tensor parallel: the sampler runs on the driver alone -----------------------------------------

def test_v0_workers_profile_the_forward_only():
    m = lookup("deepseek-r1-distill-qwen-14b")
    w = estimate(m, None)
    gpu = Target("NVIDIA GeForce RTX 4090", "gpu", int(23.55 * GiB))
    s = Settings(runtime="vllm", ctx=131072, tp=2, gpu_memory_utilization=0.98)
    b = budget_split(m, w, s, gpu, "v0")
    forward = activation_bytes(m, 2048, 256, 2, "v0", sampler=False)
    assert b.activation_workers == forward < b.activation
    assert b.activation == int(256 * m.vocab_size * 39.2)        # 256 rows of the full vocab, on rank 0
    assert b.pool_memory == b.kv_memory < b.kv_memory_workers
    # V1 all-gathers the logits: every rank runs the sampler
    v1 = budget_split(m, w, s, gpu, "v1")
    assert v1.activation_workers == v1.activation and v1.pool_memory == v1.kv_memory
    # one GPU: nothing to compare
    one = budget_split(m, w, s.with_(tp=1), gpu, "v0")
    assert one.activation_workers == one.activation


def test_v0_tp_devices_share_rank0s_blocks():
    m = lookup("deepseek-r1-distill-qwen-14b")
    gpus = [Target("NVIDIA GeForce RTX 4090", "gpu", int(23.55 * GiB))] * 2
    # past 32K V0 prefills in chunks of 2048 tokens: the driver's sampler run is the larger peak
    s = Settings(runtime="vllm", ctx=65536, tp=2, gpu_memory_utilization=0.98)
    a = VLLM("v0").allocate(m, estimate(m, None), s, gpus)
    d0, d1 = a.devices
    assert d0.kv_cache == d1.kv_cache > 0 and d0.compute > d1.compute
    # the blocks the pool holds, at 48 layers × 4 KV heads per rank × 128 × 2 (K, V) × 2 B per token
    assert d0.kv_cache == a.kv_cache_tokens * 48 * 4 * 128 * 2 * 2
