"""The largest context a pooled engine (vLLM, SGLang) starts with: one request of it fits the pool. For a model
whose every layer is full attention that is the pool's tokens; for sliding-window hybrids (Gemma 3: 5 of 6 layers
hold a window) one request can be far longer than "GPU KV cache size", as vLLM's own estimate_max_model_len finds."""

from __future__ import annotations

from runlocal.check import CheckRequest, check


def _plan(model, ctx, **kw):
    kw.setdefault("gpu", "h100")
    return check(CheckRequest(model=model, runtime="vllm", ctx=ctx, use_measurements=False, **kw))[0]


def test_full_attention_max_context_is_the_pool():
    p = _plan("qwen3-8b", 8192, gpu_memory_utilization=0.3)
    blocks = p.allocation.kv_cache_tokens // 16          # v1: tokens = blocks × 16 for one full-attention group
    assert p.max_context == min(blocks * 16, 40960)      # Qwen3-8B trained context 40,960
    assert p.max_context < 40960                          # the pool, not the trained context, is the limit here


def test_sliding_window_request_outgrows_the_reported_tokens():
    p = _plan("gemma-3-27b", 8192)
    assert p.max_context > 2 * p.allocation.kv_cache_tokens
    at = _plan("gemma-3-27b", p.max_context)
    assert at.allocation.refusal is None and at.max_concurrency >= 1
    past = _plan("gemma-3-27b", p.max_context + 16)
    assert past.allocation.refusal is not None or past.max_concurrency < 1
