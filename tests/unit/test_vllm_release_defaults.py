"""vLLM's defaults by release, as read in the released wheels (runtimes/versions.py):
- --gpu-memory-utilization: vllm/config/cache.py Field(default=0.9) up to v0.19.1, Field(default=0.92) from v0.20.0;
- CUDA graph memory inside the budget from v0.20.0 (envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS "0" → "1"),
  while v0.20's "GPU KV cache size" is still num_blocks // groups × block (int(concurrency × len) from the v0.22 wheel);
- --swap-space and its RAM check up to v0.17.1 only (PR #36216): the swap tests are in test_pool_host.py.

Hand figures: the RTX 4090 is 25,383,256,719 B as CUDA reports it; Llama-3.1-8B's KV is 32 layers × 8 heads × 128 ×
2 (K, V) × 2 B = 131,072 B a token, 2,097,152 B a 16-token block; weights + activation + non-torch memory are
17,464,606,720 B here (the same in every release below: only the share and the graphs move); graphs 512 MiB."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.runtimes import get_runtime
from runlocal.runtimes.versions import vllm_engine

CARD = 25_383_256_719
FIXED = 17_464_606_720           # weights + activation peak + non-torch memory on the 4090 (8,192 tokens)
GRAPHS = 512 * 2**20
BLOCK = 131_072 * 16


def _plan(runtime, **kw):
    return check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ctx=8192, runtime=runtime,
                              use_measurements=False, **kw))[0]


def _step(plan, label):
    return next(s for s in plan.allocation.steps if s.label == label)


@pytest.mark.parametrize("runtime,share,graphs_in,blocks,tokens", [
    # 0.9 × 25,383,256,719 = 22,844,931,047.1; − 17,464,606,720 = 5,380,324,327 → 2,565 blocks → 41,040 tokens
    ("vllm==0.19.1", 0.9, False, 2565, 41_040),
    # 0.92 × 25,383,256,719 = 23,352,596,181.5; − 17,464,606,720 − 536,870,912 = 5,351,118,549 → 2,551 blocks
    ("vllm==0.20.0", 0.92, True, 2551, 2551 * 16),
    # the current release: the same pool, reported as int(2,551 / 512 blocks a request × 8,192) = 40,816
    ("vllm", 0.92, True, 2551, int(2551 / 512 * 8192)),
])
def test_each_release_plans_its_own_utilization_default(runtime, share, graphs_in, blocks, tokens):
    plan = _plan(runtime)
    budget = int(CARD * share)
    assert budget == {0.9: 22_844_931_047, 0.92: 23_352_596_181}[share]
    assert _step(plan, "budget").value == f"{budget:,} B"
    pool = budget - FIXED - (GRAPHS if graphs_in else 0)
    assert _step(plan, "KV pool").value == f"{pool:,} B" and pool // BLOCK == blocks
    assert plan.allocation.kv_cache_tokens == tokens
    era = "from v0.20.0" if share == 0.92 else "up to v0.19.1"
    assert f"gpu_memory_utilization {share:g} (vLLM's default {era}" in " ".join(plan.allocation.assumptions)
    assert "--gpu-memory-utilization" not in plan.command      # the release's own default is not spelled out


def test_a_share_other_than_the_releases_default_is_spelled_out():
    assert _plan("vllm", gpu_memory_utilization=0.9).command.endswith("--gpu-memory-utilization 0.9")
    assert _plan("vllm==0.19.1", gpu_memory_utilization=0.92).command.endswith("--gpu-memory-utilization 0.92")
    assert "--gpu-memory-utilization" not in _plan("vllm==0.19.1", gpu_memory_utilization=0.9).command
    # asked, so no assumption about the default
    assert not any("vLLM's default" in a for a in _plan("vllm", gpu_memory_utilization=0.9).allocation.assumptions)


def test_the_rules_name_the_default_and_the_swap_space_per_release():
    assert "--gpu-memory-utilization 0.92 by default, no --swap-space (PR #36216)" in vllm_engine(None)[1]
    old, mid, new = (get_runtime(f"vllm=={v}").rules for v in ("0.17.1", "0.18.0", "0.20.0"))
    assert "--gpu-memory-utilization 0.9 by default, --swap-space 4 GiB per GPU checked against 70 % of RAM" in old
    assert "--gpu-memory-utilization 0.9 by default, no --swap-space (removed in v0.18.0, PR #36216)" in mid
    assert "CUDA graph memory inside the budget" in new and "0.92 by default" in new


def test_a_log_without_its_share_reads_its_releases_default():
    # diagnose: a log that names its vLLM release but not the share ran with that release's default
    from runlocal.diagnose.vllm_budget import default_share

    assert default_share({"vllm_version": "0.19.1"}) == 0.9
    assert default_share({"vllm_version": "0.20.0"}) == default_share({"vllm_version": "0.22.0.dev3+g1a2b3c"}) == 0.92
    assert default_share({}) == 0.9                      # no release named: 0.9, as diagnose read it before
