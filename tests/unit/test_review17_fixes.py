"""review17 findings 1, 5, 6, 11 and three of 15: the fixes a plan offers, and the words around them."""

from __future__ import annotations

from runlocal.check import CheckRequest, check

GiB = 1 << 30


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def test_no_swap_space_fix_where_the_swap_check_does_not_refuse():
    # review17 finding 5. vLLM refuses swap_space × TP above 70 % of the host's RAM (vllm/config/cache.py
    # verify_with_parallel_config). Here 4 GiB × TP 1 = 4 GiB against 0.7 × 32 GiB = 22.4 GiB: the check passes,
    # so lowering --swap-space changes nothing; the context (the KV pool) is what refuses.
    assert 4 * 1 <= 0.7 * 32
    for ask in (dict(model="llama-3.1-8b", gpu="rtx-4090", runtime="vllm", ctx=131072, ram="32G"),
                dict(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm==0.12.0")):     # CPU-only: no swap space
        p = plan(**ask)
        assert p.verdict == "does_not_fit" and p.fixes
        assert not [f.title for f in p.fixes if "swap" in f.title.lower() or "--swap-space" in f.command]


def _fix(p, start: str):
    return next(f for f in p.fixes if f.title.startswith(start))


def test_flash_attention_is_the_first_fix_where_a_build_has_it_off():
    # review17 finding 1. llama.cpp b6000 predates PR #15434 (--flash-attn auto by default; WasmEdge PR #4343,
    # bumping to b6343, reads "the type of flash attention is changed from bool to string"): flash attention is off
    # unless the bare switch -fa is given. Off, the unfused attention keeps the KQ scores, f32, per head:
    # 131,072 cells × 512 ubatch × 32 heads × 4 B = 8 GiB of compute buffer; on, they never exist.
    kq = 131072 * 512 * 32 * 4
    assert kq == 8 * GiB
    ask = dict(model="llama-3.1-8b", gpu="rtx-4090", runtime="llama.cpp==b6000", ctx=131072)
    p = plan(**ask)
    gpu = p.allocation.devices[0]
    assert p.verdict == "does_not_fit" and gpu.compute >= kq
    first = p.fixes[0]
    assert first.title == "Turn on flash attention (-fa)" and first.cost == 0
    assert first.command.endswith(" -fa") and "-c 131072" in first.command       # the context kept whole
    # → tight: with it on the GPU holds 21.28 GiB of 23.64, just over 90 % (21.26 before the weights went per tensor
    # type: token_embd at Q4_K, 281.81 MiB in RAM, the rest 4,403.49 MiB on the GPU, test_tied_embedding_bytes.py)
    assert "verdict does not fit → tight" in first.effect and "compute buffer 8.29 GiB → " in first.effect
    on = plan(**ask, flash_attn="on")
    assert on.verdict == "tight" and on.allocation.devices[0].compute < 1 * GiB    # the fix, applied
    # the KV-quant fix says it pairs flash attention (a quantized V cache needs it: src/llama-context.cpp) and its
    # own gain: 2 × 32 layers × 8 KV heads × 128 × 2 B × 131,072 = 16 GiB f16; q8_0 stores 34 B per 32 values
    kv = _fix(p, "Quantize the KV cache to q8_0")
    assert 2 * 32 * 8 * 128 * 2 * 131072 == 16 * GiB and 16 * 34 / 64 == 8.5
    assert kv.title == "Quantize the KV cache to q8_0, with flash attention on (-fa), which a quantized V cache needs"
    assert kv.effect.startswith("KV cache 16 GiB → 8.5 GiB") and kv.cost == 2


def test_flash_attention_fix_spelled_as_each_engine_takes_it():
    # a current build takes --flash-attn on|off|auto (PR #15434); Ollama's server switch is OLLAMA_FLASH_ATTENTION=1
    # (docs/faq.md "How can I enable Flash Attention?")
    p = plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="llama.cpp", ctx=131072, flash_attn="off")
    assert p.fixes[0].title == "Turn on flash attention (--flash-attn on)"
    assert p.fixes[0].command.endswith("--flash-attn on")
    o = plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="ollama", ctx=131072, flash_attn="off")
    assert o.fixes[0].title == "Turn on flash attention (OLLAMA_FLASH_ATTENTION=1)"
    assert o.fixes[0].command.startswith("OLLAMA_FLASH_ATTENTION=1 ollama serve")
    # on already (the default since PR #15434): no such fix
    d = plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="llama.cpp", ctx=262144)
    assert not [f for f in d.fixes if "flash attention" in f.title.lower()]


def test_flash_attention_paired_with_the_layer_levers_where_alone_it_does_not_start():
    # gpt-oss-120b (MXFP4, ~59 GiB of weights) cannot fit a 24 GiB GPU by flash attention alone; with it on, the
    # experts of fewer layers go to RAM than with it off, so that fix says both changes and ranks first (faster)
    p = plan(model="gpt-oss-120b", gpu="rtx-4090", ram="64G", runtime="llama.cpp==b6089")
    both = _fix(p, "Turn on flash attention (-fa) and keep the experts of ")
    alone = _fix(p, "Keep the experts of ")
    n_both = int(both.command.split("--n-cpu-moe ")[1].split()[0])
    n_alone = int(alone.command.split("--n-cpu-moe ")[1].split()[0])
    assert " -fa " in both.command and n_both < n_alone and p.fixes.index(both) < p.fixes.index(alone)
    assert plan(model="gpt-oss-120b", gpu="rtx-4090", ram="64G", runtime="llama.cpp==b6089", flash_attn="on",
                n_gpu_layers=37, n_cpu_moe=n_both).verdict in ("fits", "tight")


def test_vllm_refusal_names_the_largest_max_model_len_and_labels_the_logged_count():
    # review17 finding 11. Qwen3.5-27B on an H100 under vLLM 0.19: 48,608 is vLLM's logged "GPU KV cache size",
    # num_blocks // KV-cache groups × block (v0.19 kv_cache_utils.py _report_kv_cache_config, issue #40691), while
    # vLLM's refusal names "the estimated maximum model length" one request can have. That figure is checked here
    # against the plan re-made at it and one block's tokens above it (the refusal is vLLM's, the edge the planner's).
    ask = dict(model="qwen3.5-27b", gpu="h100", runtime="vllm==0.19.0")
    p = plan(**ask)
    refusal = p.allocation.refusal
    longest = int(refusal.split("the largest max_model_len that fits is ")[1].split(";")[0].split(" ")[0]
                  .replace(",", ""))
    assert longest == p.max_context
    assert plan(**ask, ctx=longest).allocation.refusal is None
    assert plan(**ask, ctx=longest + 784).allocation.refusal is not None     # 784 tokens: the attention block
    tokens = p.allocation.kv_cache_tokens
    assert tokens < longest and f'{tokens:,} tokens is the pool as vLLM logs it ("GPU KV cache size", per ' \
        "KV-cache group of 4)" in refusal
    assert "needs more KV cache than the" + f" {tokens:,} tokens that fit" not in refusal
    from runlocal.render.text import limit_phrases

    assert f"KV pool {tokens:,} tokens as vLLM logs its GPU KV cache size (per KV-cache group)" in limit_phrases(p)
    # from v0.21 the logged size is int(max concurrency × max_model_len) (issue #41789): the pool, no group count
    assert any(x.endswith("tokens shared by all requests") for x in limit_phrases(plan(model="qwen3.5-27b", gpu="h100",
                                                                                       runtime="vllm")))


def test_vllm_cpu_kvcache_space_from_the_environment_flag_and_fix(monkeypatch):
    # review17 finding 6. vLLM's CPU backend sizes its KV cache by VLLM_CPU_KVCACHE_SPACE, whole GiB (vllm/envs.py:
    # int(os.getenv(...)); vllm/platforms/cpu.py v0.8–v0.12: "not set, using 4 by default"; later releases size it
    # from RAM, tests/unit/test_vllm_cpu_kv_eras.py). Qwen3-8B: 36 layers ×
    # 8 KV heads × 128 × 2 (K, V) × 2 B = 147,456 B a token; 40,960 tokens = 5.625 GiB > 4, so vLLM refuses; 6 GiB
    # holds ⌊6 GiB / (147,456 B × 128)⌋ = 341 blocks = 43,648 tokens ≥ 40,960, the fewest whole GiB that do (128-token
    # blocks: the CPU backend's from v0.11.1, tests/unit/test_vllm_cpu_block_size.py); 4 GiB: 227 blocks = 29,056.
    per_token = 36 * 8 * 128 * 2 * 2
    assert 40960 * per_token / GiB == 5.625 and (6 * GiB // (per_token * 128)) * 128 == 43648
    assert (4 * GiB // (per_token * 128)) * 128 == 29056
    ask = dict(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm==0.12.0")
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    p = plan(**ask)
    assert p.verdict == "does_not_fit" and "VLLM_CPU_KVCACHE_SPACE=4 GiB" in p.allocation.refusal
    first = p.fixes[0]
    assert first.title == "Raise VLLM_CPU_KVCACHE_SPACE to 6 GiB" and first.cost == 0
    assert first.command.startswith("VLLM_CPU_KVCACHE_SPACE=6 vllm serve ") and "--max-model-len 40960" in first.command
    assert "KV pool 29,056 tokens → 43,648 tokens" in first.effect
    # the flag (the one request contract: CLI --cpu-kvcache-space, API and MCP field cpu_kvcache_space)
    assert plan(**ask, cpu_kvcache_space=6).verdict == "fits"
    assert plan(**ask, cpu_kvcache_space=5).verdict == "does_not_fit"
    # the environment, where the request leaves it unset, as vLLM reads it
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    e = plan(**ask)
    assert e.verdict == "fits" and e.allocation.kv_cache_tokens == (8 * GiB // (per_token * 128)) * 128
    assert plan(**ask, cpu_kvcache_space=5).verdict == "does_not_fit"          # a flag wins over the variable
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "lots")
    import pytest

    from runlocal.errors import InputError
    with pytest.raises(InputError, match="^VLLM_CPU_KVCACHE_SPACE: expected a whole number of GiB"):
        plan(**ask)


def test_vllm_cpu_backend_refuses_an_fp8_kv_cache(monkeypatch):
    # vllm/platforms/cpu.py check_and_update_config (v0.8 on): "Chunked-prefill and prefix-cache on the CPU backend
    # is not compatible with FP8 KV cache." V1 turns both on by default, so --kv-cache-dtype fp8 does not start
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    p = plan(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm", kv_cache="fp8", cpu_kvcache_space=16)
    assert p.verdict == "does_not_fit" and "not compatible with FP8 KV cache" in p.allocation.refusal
    q = plan(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm")
    assert not [f for f in q.fixes if "--kv-cache-dtype" in f.command]


def test_a_change_that_buys_no_context_is_not_paired_with_the_context_fix(monkeypatch):
    # vLLM's CPU backend up to v0.12: the KV space is fixed (VLLM_CPU_KVCACHE_SPACE, 4 GiB unset), so a smaller
    # checkpoint starts at exactly the context the plan already starts at; "the AWQ checkpoint, with context 28,928"
    # gave up weights for nothing
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    p = plan(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm==0.12.0")
    alone = next(f for f in p.fixes if f.title.startswith("Reduce context to "))
    assert not [f for f in p.fixes if f.title.startswith("Serve the published") and alone.title[18:] in f.title]


def _with_notes(**kw):
    return check(CheckRequest(use_measurements=False, **kw))


def test_max_context_starts_and_the_shorter_fix_keeps_the_90_percent_rule():
    # review17 §15: "max context 101,120 (the largest that fits)" above "Reduce context to 88,576 → fits" read as a
    # contradiction. 101,120 is the largest that starts; 88,320 the largest with the GPU under 90 % full (88,576
    # before the weights went per tensor type: 24.7 MB more on the GPU, test_tied_embedding_bytes.py).
    from runlocal.render.text import limit_phrases

    ask = dict(model="llama-3.1-8b", gpu="rtx-4090", runtime="llama.cpp==b6000", ctx=131072)
    p = plan(**ask)
    assert "max context 101,120 per request (the largest that starts)" in limit_phrases(p)
    fix = _fix(p, "Reduce context to 88,320")
    assert "the longest under the 90 % rule (101,120, the max context, starts but leaves less room)" in fix.effect
    at_max, at_fix = plan(**{**ask, "ctx": 101120}), plan(**{**ask, "ctx": 88320})
    cap = at_max.allocation.devices[0].capacity
    assert at_max.verdict == "tight" and at_max.allocation.devices[0].total > 0.9 * cap   # starts, above 90 %
    assert at_fix.verdict == "fits" and at_fix.allocation.devices[0].total <= 0.9 * cap


def test_sycl_plain_output_says_the_driver_context_is_not_counted():
    # review17 §15: an Arc B580 plan (SYCL) shows overhead 0.00: no CUDA context, and the Level Zero one unmeasured
    p, notes = _with_notes(model="phi-4", gpu="arc-b580", ctx="16k")
    assert p.allocation.devices[0].overhead == 0
    assert any(n.startswith("SYCL / Level Zero: the driver's own context on the GPU is not measured and not counted")
               for n in notes)
    _, cuda = _with_notes(model="phi-4", gpu="rtx-4090", ctx="16k")
    assert not any("driver's own context" in n for n in cuda)


def test_cpu_only_plain_output_states_the_bandwidth_assumed():
    # review17 §15: a CPU-only plan's speeds rest on an assumed bandwidth: dual-channel DDR5-5600 is
    # 2 channels × 8 B × 5,600 MT/s = 89.6 GB/s; a named memory (2-channel DDR4-3200: 2 × 8 × 3,200 = 51.2) is said
    assert 2 * 8 * 5600 / 1000 == 89.6 and 2 * 8 * 3200 / 1000 == 51.2
    _, notes = _with_notes(model="qwen3-8b", gpu="none")
    assert any(n.startswith("RAM bandwidth: assumed 89.6 GB/s, dual-channel DDR5-5600") for n in notes)
    _, named = _with_notes(model="qwen3-8b", gpu="ddr4-3200")
    assert not any(n.startswith("RAM bandwidth: assumed") for n in named) and any("51.2 GB/s" in n for n in named)
    _, gpu = _with_notes(model="qwen3-8b", gpu="rtx-4090")
    assert not any(n.startswith("RAM bandwidth: assumed") for n in gpu)


def test_flash_attention_fix_names_the_refusal_it_lifts():
    # a q8_0 V cache without flash attention: llama_init_from_model refuses ("quantized V cache requires flash_attn
    # to be enabled", src/llama-context.cpp); Ollama refuses OLLAMA_KV_CACHE_TYPE=q8_0 with OLLAMA_FLASH_ATTENTION=0
    p = plan(model="qwen3-8b", gpu="rtx-4090", runtime="llama.cpp==b6000", kv_cache="q8_0")
    assert p.verdict == "does_not_fit" and p.fixes[0].title == "Turn on flash attention (-fa)"
    assert "quantized V cache requires flash_attn to be enabled" in p.fixes[0].effect
    o = plan(model="qwen3-8b", gpu="rtx-4090", runtime="ollama", kv_cache="q8_0", flash_attn="off")
    assert o.fixes[0].title == "Turn on flash attention (OLLAMA_FLASH_ATTENTION=1)"
    assert "compute buffer" not in o.fixes[0].effect and "OLLAMA_FLASH_ATTENTION=0" in o.fixes[0].effect


def test_unset_cpu_kvcache_space_says_what_it_assumed(monkeypatch):
    # vLLM's unset default changed after v0.12 (PR #29604, PR #39781: from RAM, not 4 GiB): the plan says which
    # rule it used and what it assumed (versions17; the eras: tests/unit/test_vllm_cpu_kv_eras.py)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    _, notes = _with_notes(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm")
    assert any(n.startswith("VLLM_CPU_KVCACHE_SPACE unset: the current vLLM") and "PR #39781" in n for n in notes)
    _, old = _with_notes(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm==0.12.0")
    assert any(n.startswith("VLLM_CPU_KVCACHE_SPACE unset: vLLM 0.12.0 allocates 4 GiB") for n in old)
    _, given = _with_notes(model="qwen3-8b", gpu="none", ram="32G", runtime="vllm", cpu_kvcache_space=6)
    _, on_gpu = _with_notes(model="qwen3-8b", gpu="rtx-4090", runtime="vllm")
    assert not any("VLLM_CPU_KVCACHE_SPACE unset" in n for n in given + on_gpu)
