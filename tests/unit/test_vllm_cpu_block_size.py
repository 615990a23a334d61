"""vLLM's CPU backend block size with --block-size unset, per release (runtimes/vllm_cpu.py cpu_block_size), read in the
released wheels' vllm/platforms/cpu.py check_and_update_config: 16 up to v0.11.0 (128 only with
intel_extension_for_pytorch installed), 128 from v0.11.1, and for MLA models 16 from v0.28.0 (the CPU MLA kernel's only
size; AMX CPUs run AMX_MLA at 128 from v0.29.0, not assumed). Each era is checked against a hand computation, and the
128-token era against issue #29233's logged estimate (37,376 tokens)."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.runtimes.vllm_cpu import cpu_block_size

GiB = 1 << 30
QWEN3_06B_PER_TOKEN = 28 * 8 * 128 * 2 * 2          # layers × KV heads × head_dim × (K, V) × 2 B = 114,688 B
# DeepSeek-V2-Lite: 27 layers of one latent row, kv_lora_rank 512 + qk_rope_head_dim 64 = 576 × 2 B (MLA: no V row)
DSV2_LITE_PER_TOKEN = 27 * (512 + 64) * 2            # 31,104 B


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))


@pytest.fixture(autouse=True)
def _unset(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)


@pytest.mark.parametrize("version, mla, block", [
    ("0.10.2", False, 16), ("0.11.0", False, 16),       # "128 if ipex_available else 16"
    ("0.11.1", False, 128), ("0.19.1", False, 128), ("0.33.0", False, 128),   # "cache_config.block_size = 128"
    ("0.27.0", True, 128),                               # no MLA override yet
    ("0.28.0", True, 16), ("0.33.0", True, 16),          # "CPU MLA backend requires block_size=16"
    (None, False, 128), (None, True, 16),                # unversioned: the current release
])
def test_the_block_each_release_picks(version, mla, block):
    size, why = cpu_block_size(version, mla)
    assert size == block and "vllm/platforms/cpu.py" in why


def test_v0_11_0_plans_16_token_blocks_and_v0_11_1_128():
    # 4 GiB unset space in both (≤ 0.12). Qwen3-0.6B asks 40,960 tokens; the longest that fits is whole blocks:
    # ⌊4 GiB / (114,688 B × 16)⌋ × 16 = 2,340 × 16 = 37,440; ⌊4 GiB / (114,688 B × 128)⌋ × 128 = 292 × 128 = 37,376
    # (issue #29233's "estimated maximum model length is 37376", a build of 2025-11 — 128-token blocks).
    assert (4 * GiB // (QWEN3_06B_PER_TOKEN * 16)) * 16 == 37440
    assert (4 * GiB // (QWEN3_06B_PER_TOKEN * 128)) * 128 == 37376
    old, _ = plan(model="qwen3-0.6b", gpu="none", ram="32G", runtime="vllm==0.11.0", ctx=40960)
    new, _ = plan(model="qwen3-0.6b", gpu="none", ram="32G", runtime="vllm==0.11.1", ctx=40960)
    assert (old.max_context, new.max_context) == (37440, 37376)
    assert any("block_size 16 on the CPU backend" in a for a in old.allocation.assumptions)
    assert any("block_size 128 on the CPU backend" in a for a in new.allocation.assumptions)


def test_mla_models_take_16_token_blocks_from_v0_28():
    # VLLM_CPU_KVCACHE_SPACE=4 at 32,768 tokens: 16-token blocks hold ⌊4 GiB / (31,104 B × 16)⌋ = 8,630 blocks =
    # 138,080 tokens; v0.27.0's 128-token blocks ⌊4 GiB / (31,104 B × 128)⌋ = 1,078 blocks = 137,984 tokens
    assert 4 * GiB // (DSV2_LITE_PER_TOKEN * 16) == 8630 and 4 * GiB // (DSV2_LITE_PER_TOKEN * 128) == 1078
    for runtime, tokens in (("vllm==0.27.0", 137_984), ("vllm==0.28.0", 138_080), ("vllm", 138_080)):
        p, _ = plan(model="deepseek-v2-lite", gpu="none", ram="64G", runtime=runtime, ctx=32768, cpu_kvcache_space=4)
        assert p.allocation.kv_bytes_per_token == DSV2_LITE_PER_TOKEN
        assert p.allocation.kv_cache_tokens == tokens, runtime


def test_a_gpu_plan_keeps_16_token_blocks():
    p, _ = plan(model="qwen3-0.6b", gpu="rtx 4090", runtime="vllm", ctx=40960)
    assert "block_size 16" in p.allocation.assumptions
