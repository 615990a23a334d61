"""vLLM V0's --swap-space is host memory held, not KV a decoded token reads (review23 finding 2).

vllm/worker/cache_engine.py: CacheEngine allocates ``gpu_cache`` and ``cpu_cache``; ``cpu_cache`` is touched only by
swap_in / swap_out (a preempted sequence's blocks), and the model runner is handed ``Worker.kv_cache``, which returns
``self.gpu_cache`` (vllm/worker/worker.py). So the bytes a decoded token reads do not depend on the swap space, nor on
whether the release is V0 (swap allocated as pinned CPU blocks) or V1 (swap checked against RAM, not allocated):
the decode figure must be the same across them at the same model, card and context. Before the fix the swap was the
host's "KV cache" and the speed model shared each token's KV read over it at RAM bandwidth (llama-3.1-8b on an H100
at 32k: 0.6.3 priced below 0.17.1; Mllama on 0.10: 22.3 instead of 94.7 tokens/s).
"""

from __future__ import annotations

from runlocal.check import CheckRequest, check

GiB = 1 << 30


def _plan(model, runtime, **extra):
    return check(CheckRequest(model=model, runtime=runtime, gpu="h100", ram="64G", use_measurements=False,
                              **extra))[0]


def test_v0_and_v1_decode_the_same_bytes():
    v0 = _plan("llama-3.1-8b", "vllm==0.6.3", ctx=32768)          # V0: 4 GiB of pinned CPU KV blocks
    v1 = _plan("llama-3.1-8b", "vllm==0.17.1", ctx=32768)         # V1: the same flag, nothing allocated
    assert any(st.label == "host swap space" and st.value == f"{4 * GiB:,} B" for st in v0.allocation.steps)
    assert v0.speed["decode_tokens_per_s"] == v1.speed["decode_tokens_per_s"]
    assert v0.speed["decode_short_tokens_per_s"] == v1.speed["decode_short_tokens_per_s"]


def test_the_swap_space_size_moves_no_decode_figure():
    small = _plan("llama-3.2-11b-vision", "vllm==0.10", parallel=160, swap_space=1)
    large = _plan("llama-3.2-11b-vision", "vllm==0.10", parallel=160, swap_space=8)
    assert small.speed["decode_tokens_per_s"] == large.speed["decode_tokens_per_s"]


def test_the_host_holds_the_swap_as_memory_not_as_kv():
    host = _plan("llama-3.1-8b", "vllm==0.6.3", ctx=32768).allocation.devices[-1]
    # 4 GiB × TP 1, all of it on the host, none of it counted as KV the running requests read
    assert host.kind == "cpu" and host.kv_cache == 0 and host.weights == 0 and host.total == 4 * GiB
