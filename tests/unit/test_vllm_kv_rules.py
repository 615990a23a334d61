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
from runlocal.runtimes.vllm import (
    BLOCK_SIZE,
    CONCURRENCY_REPORT_ENGINES,
    ENGINES,
    UNIFIED_KV_ENGINES,
    VLLM,
    GiB,
    KVGroup,
    activation_bytes,
    budget_split,
    kv_groups,
    kv_pool,
)


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
    s = Settings(runtime="vllm", ctx=131072, tp=2).with_(gpu_memory_utilization=0.98)
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
    s = Settings(runtime="vllm", ctx=65536, tp=2).with_(gpu_memory_utilization=0.98)
    a = VLLM("v0").allocate(m, estimate(m, None), s, gpus)
    d0, d1 = a.devices
    assert d0.kv_cache == d1.kv_cache > 0 and d0.compute > d1.compute
    # the blocks the pool holds, at 48 layers × 4 KV heads per rank × 128 × 2 (K, V) × 2 B per token
    assert d0.kv_cache == a.kv_cache_tokens * 48 * 4 * 128 * 2 * 2


# --- hybrid attention + Mamba / Gated DeltaNet (vLLM v0.19.0: HybridAttentionMambaModelConfig, MambaSpec,
# mamba_utils.MambaStateShapeCalculator). Every expected figure below is worked out by hand from the catalog's
# published configs and vLLM's formulas, written out term by term.

QWEN3_NEXT = lookup("qwen3-next-80b-a3b")    # 48 layers: 12 full (2 KV heads × 256) + 36 Gated DeltaNet
GRANITE_4H = lookup("granite-4.0-h-tiny")    # 40 layers: 4 attention (4 KV heads × 128) + 36 Mamba-2


def test_gated_deltanet_state_per_rank_qwen3_next_tp4():
    """16 key heads, 32 value heads of 128, kernel 4, bf16 (Qwen3NextForCausalLM has no dtype hook): conv
    (4 − 1) × (2·16·128 + 32·128) / 4 channels × 2 B, SSM 32/4 heads × 128 × 128 × 2 B."""
    from runlocal.runtimes.vllm_kvpool import gated_deltanet_state_bytes, recurrent_state_bytes_per_rank
    conv = 3 * (8192 // 4) * 2
    ssm = 8 * 128 * 128 * 2
    assert conv + ssm == 274_432
    r = QWEN3_NEXT.recurrent_layers[0]
    assert recurrent_state_bytes_per_rank(r, 4, QWEN3_NEXT.architecture) == 274_432
    assert gated_deltanet_state_bytes(4, 16, 32, 128, 128, 4) == 274_432
    groups = {g.kind: g for g in kv_groups(QWEN3_NEXT, "f16", "f16", tp=4)}
    assert groups["mamba"].layers == 36 and groups["mamba"].state_bytes == 274_432
    assert groups["full"].layers == 12 and groups["full"].bytes_per_token == 2 * 1 * 256 * 2   # 2 KV heads < TP 4: 1


@pytest.mark.parametrize("engine,report", [("v1", "blocks"), ("v1-cudagraph", "concurrency")])
def test_qwen3_next_tp4_pool(engine, report):
    """Attention block = 16 × ⌈274,432 / (16 × 1,024)⌉ = 16 × 17 = 272 tokens, page 272 × 1,024 = 278,528 B
    (the state padded to it); 12 full + 36 GDN → groups of 12: 1 full + 3 mamba; a 32K request needs
    ⌈32,768 / 272⌉ = 121 blocks + 1 per mamba group = 124."""
    groups = kv_groups(QWEN3_NEXT, "f16", "f16", tp=4)
    avail = 30 * GiB
    pool = kv_pool(avail, groups, 32768, 8192, engine)
    blocks = avail // 278_528 // 12
    assert (pool.block_size, pool.page_bytes, pool.mamba_state_bytes) == (272, 278_528, 274_432)
    assert (pool.groups, pool.mamba_groups, pool.group_size) == (4, 3, 12)
    assert pool.num_blocks == blocks and pool.blocks_per_request == 124
    assert pool.max_concurrency == pytest.approx(blocks / 124)
    if report == "blocks":       # v0.19: num_blocks // groups × the smallest block (min(272, max_model_len))
        assert pool.tokens == blocks // 4 * 272
    else:                        # PR #40694
        assert pool.tokens == int(blocks / 124 * 32768)


def test_granite_4h_mamba2_state_and_block():
    """Mamba-2, 48 heads × 64, d_state 128, 1 group, kernel 4, intermediate 2 × 1536: TP 1 conv 3 × (3072 + 2·128)
    × 2 B + SSM 48 × 64 × 128 × 2 B = 806,400 B; attention 2 × 4 × 128 × 2 = 2,048 B/token → block
    16 × ⌈806,400 / 32,768⌉ = 400; 4 attention + 36 mamba → groups of 4: 1 + 9."""
    pool = kv_pool(8 * GiB, kv_groups(GRANITE_4H, "f16", "f16"), 16384, 2048, "v1")
    assert pool.mamba_state_bytes == 3 * 3328 * 2 + 48 * 64 * 128 * 2 == 806_400
    assert (pool.block_size, pool.page_bytes) == (400, 400 * 2048)
    assert (pool.groups, pool.mamba_groups, pool.group_size) == (10, 9, 4)
    blocks = 8 * GiB // (400 * 2048) // 4
    assert pool.num_blocks == blocks and pool.blocks_per_request == _cdiv(16384, 400) + 9
    assert pool.tokens == blocks // 10 * 400


def test_granite_4h_tp2_replicates_the_single_group():
    """extra_groups_for_head_shards: 1 group does not divide TP 2, so it becomes 2: conv channels
    3072 + 2 × 2 × 128 = 3,584, 1,792 per rank; SSM 24 heads per rank."""
    mamba = next(g for g in kv_groups(GRANITE_4H, "f16", "f16", tp=2) if g.kind == "mamba")
    assert mamba.state_bytes == 3 * 1792 * 2 + 24 * 64 * 128 * 2 == 403_968


def test_prefix_caching_modes():
    """With prefix caching Granite (SupportsMambaPrefixCaching) runs mamba_cache_mode "all": the block is a
    multiple of lcm(chunk 256, 16) = 256 tokens holding the state (⌈806,400 / 2,048⌉ = 394 → 512) and a request
    keeps a state per block; models without that support run "align": two states per request."""
    from runlocal.runtimes.vllm import mamba_cache_mode
    assert mamba_cache_mode(GRANITE_4H, True) == "all" and mamba_cache_mode(GRANITE_4H, False) == "none"
    assert mamba_cache_mode(QWEN3_NEXT, True) == "align"
    groups = kv_groups(GRANITE_4H, "f16", "f16")
    pool = kv_pool(8 * GiB, groups, 16384, 2048, "v1", mamba_cache_mode="all")
    assert pool.block_size == 512 and pool.mamba_blocks_per_request == 16384 // 512
    assert pool.blocks_per_request == 32 + 9 * 32
    assert pool.tokens == pool.num_blocks // 10 * 512       # every group's block is 512 here
    pool = kv_pool(8 * GiB, kv_groups(QWEN3_NEXT, "f16", "f16", tp=4), 32768, 8192, "v1", mamba_cache_mode="align")
    assert pool.block_size == 272 and pool.blocks_per_request == 121 + 3 * 2


@pytest.mark.parametrize("engine", UNIFIED_KV_ENGINES)
def test_engines_before_the_hybrid_manager_pool_attention_layers_only(engine):
    groups = kv_groups(QWEN3_NEXT, "f16", "f16", tp=4)
    attention_only = [g for g in groups if g.kind != "mamba"]
    assert kv_pool(GiB, groups, 32768, 8192, engine) == kv_pool(GiB, attention_only, 32768, 8192, engine)


def test_ssm_dtype_follows_vllm_model_hooks():
    """Qwen3_5ForConditionalGenerationConfig takes the HF config's mamba_ssm_dtype; NemotronH defaults to float32;
    other architectures keep the model dtype (here 16-bit)."""
    from runlocal.model.spec import RecurrentSpec
    from runlocal.runtimes.vllm_kvpool import recurrent_state_bytes_per_rank
    r = RecurrentSpec(3 * 10240, 48 * 128 * 128, "gated_deltanet", 10240, ssm_dtype="float32")
    conv = 3 * 10240 * 2
    assert recurrent_state_bytes_per_rank(r, 1, "Qwen3_5ForConditionalGeneration") == conv + 48 * 128 * 128 * 4
    assert recurrent_state_bytes_per_rank(r, 1, "Qwen3NextForCausalLM") == conv + 48 * 128 * 128 * 2
    plain = RecurrentSpec(3 * 10240, 48 * 128 * 128, "mamba2", 10240, 8, 128)
    assert recurrent_state_bytes_per_rank(plain, 1, "NemotronHForCausalLM") == conv + 48 * 128 * 128 * 4


def _qwen35_27b_groups(tp: int, kv_bytes: int) -> list[KVGroup]:
    """Qwen3.5-27B as its model card gives it: 16 full-attention layers (4 KV heads × 256) and 48 Gated DeltaNet
    layers (16 key / 48 value heads of 128, kernel 4), SSM state in float32 (config mamba_ssm_dtype)."""
    state = 3 * (10240 // tp) * 2 + (48 // tp) * 128 * 128 * 4
    return [KVGroup("full", 16, 2 * (4 // tp) * 256 * kv_bytes), KVGroup("mamba", 48, 0, None, state)]


def test_issue_40691_qwen35_27b_v019_log():
    """vLLM v0.19.0, H20, max_model_len 32,768: state 61,440 + 3,145,728 = 3,207,168 B; block
    16 × ⌈3,207,168 / 65,536⌉ = 784; 1 full + 3 mamba groups; a request needs ⌈32,768 / 784⌉ = 42 + 3 = 45 blocks.
    The logged 290,864 tokens = 371 × 784 = num_blocks // 4 × 784 and 33.04x = num_blocks / 45 give 1,487 blocks."""
    groups = _qwen35_27b_groups(1, 2)
    pool = kv_pool(0, groups, 32768, 16384, "v1", num_blocks=1487)
    assert pool.block_size == 784 and pool.blocks_per_request == 45 and pool.groups == 4
    assert pool.tokens == 290_864
    assert round(pool.max_concurrency, 2) == 33.04


def test_talos_pr1995_qwen38_27b_tp2_fp8_prefix_caching_log():
    """TP 2, fp8 KV, prefix caching ("align"), max_model_len 131,072: state 3 × 5,120 × 2 + 24 × 128 × 128 × 4 =
    1,603,584 B; attention 2 × 2 × 256 × 1 = 1,024 B/token → block 16 × ⌈1,603,584 / 16,384⌉ = 1,568; a request
    needs ⌈131,072 / 1,568⌉ = 84 + 3 × 2 = 90 blocks. 208 blocks: int(208 / 90 × 131,072) = 302,921, as logged."""
    groups = _qwen35_27b_groups(2, 1)
    pool = kv_pool(0, groups, 131072, 8192, "v1-cudagraph", num_blocks=208, mamba_cache_mode="align")
    assert pool.block_size == 1568 and pool.blocks_per_request == 90
    assert pool.tokens == 302_921 and round(pool.max_concurrency, 2) == 2.31


def test_planner_explains_the_hybrid_pool():
    """`runlocal check qwen3-next-80b-a3b --runtime vllm --gpu h100 --tp 4 --ctx 32k`: the allocation's blocks,
    tokens and concurrency follow the rules above from its own KV memory."""
    model = QWEN3_NEXT
    s = Settings(runtime="vllm", ctx=32768, tp=4)
    gpu = Target("NVIDIA H100 SXM 80GB", "gpu", 80 * GiB)
    alloc = VLLM().allocate(model, estimate(model, None), s, [gpu] * 4)
    b = budget_split(model, estimate(model, None), s, gpu)
    blocks = b.pool_memory // 278_528 // 12
    assert alloc.max_concurrency == pytest.approx(blocks / 124)
    assert alloc.kv_cache_tokens == int(blocks / 124 * 32768)
    steps = {st.label: st.value for st in alloc.steps}
    assert steps["attention block"] == "272 tokens, page 278,528 B"
    assert steps["KV-cache groups"] == "4" and steps["mamba state page"] == "274,432 B"
