"""vLLM's CPU backend with VLLM_CPU_KVCACHE_SPACE unset, per release (runtimes/vllm_cpu.py): 4 GiB up to v0.12.0, half
of a NUMA node's RAM in v0.13.0–v0.19.1 (PR #29604), --gpu-memory-utilization × the node's RAM less the worker's own
memory from v0.20.0 (PR #39781). The boundaries were read in the released wheels' vllm/platforms/cpu.py and
vllm/v1/worker/cpu_worker.py; each era is checked here against a hand computation (one NUMA node holding the RAM
given, as the plan assumes and says)."""

from __future__ import annotations

import math

import pytest

from runlocal.check import CheckRequest, check
from runlocal.runtimes.vllm_cpu import cpu_kv_rule

GiB = 1 << 30
QWEN3_8B_PER_TOKEN = 36 * 8 * 128 * 2 * 2          # layers × KV heads × head_dim × (K, V) × 2 B = 147,456 B
QWEN3_06B_PER_TOKEN = 28 * 8 * 128 * 2 * 2         # 114,688 B


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))


@pytest.fixture(autouse=True)
def _unset(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)


@pytest.mark.parametrize("version, rule", [
    ("0.11.0", "fixed"), ("0.12.0", "fixed"),             # v0.12.0's get_device_total_memory: "using 4 by default"
    ("0.13.0", "half-node"), ("0.19.1", "half-node"),     # DEFAULT_CPU_MEM_UTILIZATION = 0.5 from v0.13.0 to v0.19.1
    ("0.20.0", "profiled"), ("0.33.0", "profiled"),       # CPUWorker.determine_available_memory: "Auto set …"
    (None, "profiled"),                                   # unversioned: the current release
])
def test_the_rule_each_release_sizes_an_unset_space_by(version, rule):
    assert cpu_kv_rule(version) == rule


def test_up_to_v0_12_the_space_is_4_gib_as_issue_29233_logs():
    # issue #29233 (2025-11-18, a CPU build of that month): Qwen3-0.6B at max_model_len 40960 — "(4.38 GiB KV cache is
    # needed, which is larger than the available KV cache memory (4.00 GiB). Based on the available memory, the
    # estimated maximum model length is 37376." By hand: 40,960 × 114,688 B = 4.375 GiB > 4 GiB.
    assert round(40960 * QWEN3_06B_PER_TOKEN / GiB, 2) == 4.38
    p, notes = plan(model="qwen3-0.6b", gpu="none", ram="32G", runtime="vllm==0.12.0", ctx=40960)
    assert p.verdict == "does_not_fit" and "VLLM_CPU_KVCACHE_SPACE=4 GiB" in p.allocation.refusal
    assert sum(d.kv_cache for d in p.allocation.devices) <= 4 * GiB
    # vLLM's 37,376 is whole 128-token blocks (the CPU backend's block_size from v0.11.1, planned so since versions18):
    # ⌊4 GiB / (114,688 B × 128)⌋ × 128 = 292 × 128 = 37,376 — the log's figure exactly (16-token blocks gave 37,440)
    assert (4 * GiB // (QWEN3_06B_PER_TOKEN * 128)) * 128 == 37376
    assert p.max_context == 37376
    assert any("allocates 4 GiB of KV cache" in n for n in notes)


def test_v0_13_to_v0_19_take_half_the_ram_whatever_the_weights():
    # PR #29604: int(psutil total // NUMA nodes × 0.5); one node of 32 GiB → 16 GiB, whose 128-token blocks (the CPU
    # backend's from v0.11.1) of Qwen3-8B hold ⌊16 GiB / (147,456 B × 128)⌋ × 128 = 910 × 128 = 116,480 tokens. With
    # 15.3 GiB of BF16 weights that is over the 32 GiB — vLLM starts into an out-of-memory — and the fix sets the
    # fewest whole GiB that hold one 40,960-token request: 40,960 × 147,456 B = 5.625 GiB → 6 GiB (341 blocks =
    # 43,648 tokens).
    assert (16 * GiB // (QWEN3_8B_PER_TOKEN * 128)) * 128 == 116480
    assert 40960 * QWEN3_8B_PER_TOKEN / GiB == 5.625 and (6 * GiB // (QWEN3_8B_PER_TOKEN * 128)) * 128 == 43648
    for version in ("0.13.0", "0.19.1"):
        p, notes = plan(model="qwen3-8b", gpu="none", ram="32G", runtime=f"vllm=={version}")
        assert p.allocation.kv_cache_tokens == 116480
        assert p.verdict == "does_not_fit"
        first = p.fixes[0]
        assert first.title == "Set VLLM_CPU_KVCACHE_SPACE to 6 GiB" and first.cost == 0
        assert first.command.startswith("VLLM_CPU_KVCACHE_SPACE=6 vllm serve ")
        assert "KV pool 116,480 tokens → 43,648 tokens" in first.effect
        assert any("half a NUMA node's RAM" in n and "one NUMA node" in n for n in notes)


def test_from_v0_20_the_space_is_the_utilization_share_less_the_worker():
    # PR #39781 (cpu_worker.py): requested = ceil(MemTotal × gpu_memory_utilization), KV = requested − the worker's
    # RSS after warm-up (planned as weights + activation peak). --gpu-memory-utilization defaults to 0.92 from
    # v0.20.0 (vllm/config/cache.py; the CPU platform keeps it): ceil(32 GiB × 0.92) = ceil(31,610,959,298.56).
    requested = math.ceil(32 * GiB * 0.92)
    assert requested == 31_610_959_299
    for runtime in ("vllm==0.20.0", "vllm"):
        p, notes = plan(model="qwen3-8b", gpu="none", ram="32G", runtime=runtime)
        (ram,) = p.allocation.devices
        space = requested - ram.weights - ram.compute
        # the pool is whole 128-token blocks of that space (40,960 = 320 blocks per request, so v0.21's
        # int(concurrency × max_model_len) is the same count)
        assert p.allocation.kv_cache_tokens == (space // (QWEN3_8B_PER_TOKEN * 128)) * 128
        assert p.verdict == "fits"       # 92 % of the RAM is vLLM's own default budget: its tight line
        assert any("--gpu-memory-utilization × the NUMA node's RAM" in n for n in notes)
    # a lower utilization shrinks it by the same share of the RAM: 0.92 → 0.8 is 3.84 GiB, 27,300 tokens fewer or so
    low, _ = plan(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm", gpu_memory_utilization=0.8)
    assert abs((p.allocation.kv_cache_tokens - low.allocation.kv_cache_tokens) * QWEN3_8B_PER_TOKEN
               - (requested - math.ceil(32 * GiB * 0.8))) < QWEN3_8B_PER_TOKEN * 128


def test_from_v0_20_weights_over_the_share_refuse_as_vllm_does():
    # 16 GiB of RAM: ceil(16 GiB × 0.92) = 15,805,479,650 B < Qwen3-8B's BF16 weights alone (8.19 B params × 2 B ≈
    # 16.4e9 B): requested_memory_for_kv ≤ 0 raises ValueError in CPUWorker.determine_available_memory
    assert math.ceil(16 * GiB * 0.92) == 15_805_479_650 < 8.19e9 * 2
    p, _ = plan(model="qwen3-8b", gpu="none", ram="16G", runtime="vllm")
    assert p.verdict == "does_not_fit"
    assert "leaving none for the KV cache" in p.allocation.refusal and "--gpu-memory-utilization 0.92" in p.allocation.refusal
    # before v0.20 the same machine planned its fixed space: no such refusal
    old, _ = plan(model="qwen3-8b", gpu="none", ram="16G", runtime="vllm==0.12.0")
    assert "leaving none" not in (old.allocation.refusal or "")


def test_a_set_space_is_the_same_in_every_release():
    # VLLM_CPU_KVCACHE_SPACE set: GiB, every release (v0.20+ moves it to kv_cache_memory_bytes = N × GiB_bytes)
    tokens = (6 * GiB // (QWEN3_8B_PER_TOKEN * 128)) * 128      # 128-token blocks in each of these releases
    for runtime in ("vllm==0.12.0", "vllm==0.13.0", "vllm"):
        p, notes = plan(model="qwen3-8b", gpu="none", ram="32G", runtime=runtime, cpu_kvcache_space=6)
        assert p.allocation.kv_cache_tokens == tokens
        assert not any("VLLM_CPU_KVCACHE_SPACE unset" in n for n in notes)


def _detected(monkeypatch, total_gib: int, free_gib: int):
    """This machine, detected: no GPU, ``total_gib`` of RAM of which ``free_gib`` is available now."""
    from runlocal.hardware import detect
    monkeypatch.setattr(detect, "detect_system", lambda: detect.SystemInfo(total_gib * GiB, free_gib * GiB))


def test_v0_20_to_v0_32_refuse_at_start_up_where_the_share_is_not_free(monkeypatch):
    # CPUWorker.__init__ (0.20.0–0.32.0): requested = ceil(MemTotal × 0.92) = ceil(64 GiB × 0.92) = 63,221,918,598 B
    # = 58.88 GiB (0.92: --gpu-memory-utilization's default from 0.20.0, read from the wheels by fixes18a) > the 48 GiB
    # free now → ValueError "… on startup is less than desired CPU memory utilization" before the model loads. 0.33.0
    # dropped that check; its determine_available_memory still refuses the KV request (requested − the worker's RSS)
    # above what the loaded worker leaves (48 GiB − RSS): the same 58.88 > 48.
    _detected(monkeypatch, 64, 48)
    requested = math.ceil(64 * GiB * 0.92)
    assert requested == 63_221_918_598 and round(requested / GiB, 2) == 58.88
    for runtime in ("vllm==0.20.0", "vllm==0.32.0"):
        p, _ = plan(model="qwen3-0.6b", runtime=runtime, ctx=8192)
        assert "(48.00/64.00 GiB) on startup is less than desired CPU memory utilization (0.92, 58.88 GiB)" \
            in p.allocation.refusal, runtime
    p, _ = plan(model="qwen3-0.6b", runtime="vllm", ctx=8192)
    assert "on kv cache allocation is less than requested memory for kv" in p.allocation.refusal
    assert "/58.88 GiB)" in p.allocation.refusal and p.verdict == "does_not_fit"
    # 0.19.1 takes half the node (32 GiB) and has no such check; utilization 0.7 asks ceil(44.8 GiB) ≤ 48: it starts
    assert "desired CPU memory" not in (plan(model="qwen3-0.6b", runtime="vllm==0.19.1", ctx=8192)[0].allocation.refusal
                                        or "")
    low, _ = plan(model="qwen3-0.6b", runtime="vllm==0.20.0", ctx=8192, gpu_memory_utilization=0.7)
    assert low.allocation.refusal is None and low.verdict != "does_not_fit"     # 44.8 of 48 GiB: "tight"


def test_from_v0_20_a_set_space_over_what_the_loaded_worker_leaves_is_refused(monkeypatch):
    # determine_available_memory, explicit kv_cache_memory_bytes (VLLM_CPU_KVCACHE_SPACE × GiB): 40 GiB > 48 GiB free
    # less Qwen3-8B's ~15.3 GiB of weights → "on kv cache allocation is less than requested memory for kv (40.00 GiB)";
    # 30 GiB fits under it. Before 0.20 there is no such check (the verdict judges the RAM).
    _detected(monkeypatch, 64, 48)
    big, _ = plan(model="qwen3-8b", runtime="vllm", ctx=8192, cpu_kvcache_space=40)
    assert "requested memory for kv (40.00 GiB)" in big.allocation.refusal
    assert plan(model="qwen3-8b", runtime="vllm", ctx=8192, cpu_kvcache_space=30)[0].allocation.refusal is None
    old, _ = plan(model="qwen3-8b", runtime="vllm==0.19.1", ctx=8192, cpu_kvcache_space=40)
    assert "requested memory for kv" not in (old.allocation.refusal or "")
