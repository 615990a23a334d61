"""review19 finding 4: an old named release gets no plan it cannot run.

- Ollama 0.3.0 and gpt-oss: data/arch_support.json's Ollama row says v0.11.0 first loads it, and v0.3.14 (the oldest
  release read) does not, so no older release does either;
- Ollama v0.3.14-v0.5.7 (before Makefile.sync): read in their vendored llama/ tree (mends20b);
- OLLAMA_KV_CACHE_TYPE: ollama/ollama commit 1bdab9fdb "llm: introduce k/v context quantization (#6279)", 2024-12-04;
  envconfig/config.go has the variable at v0.5.0 and not at v0.4.7 (read in the ollama/ollama tags);
- vLLM: the first release per model type, from a maintainer's or release's own words (arch_support.VLLM_FIRST).
"""

from __future__ import annotations

from runlocal.check import CheckRequest, check


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def test_ollama_older_than_the_mapped_releases_is_refused_where_the_oldest_mapped_lacks_it():
    p = plan(model="gpt-oss-20b", gpu="rtx-4090", runtime="ollama==0.3.0")
    assert p.verdict == "does_not_fit"
    assert p.allocation.refusal.startswith("Ollama 0.3.0 cannot load this model") and "v0.11.0" in p.allocation.refusal
    # 'llama' is in the oldest release read (v0.3.14): whether 0.3.0 loads it is not read, so it is planned
    assert plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="ollama==0.3.0").allocation.refusal is None


def test_ollama_releases_before_0_5_8_answer_from_their_vendored_llama_cpp():
    """Read by hand in the ollama/ollama tags: `git grep -c '"olmo2"' v0.5.1 -- llama/llama.cpp` → 0, v0.5.2 → 1
    (llama/vendoring: LLAMACPP_BASE_COMMIT 3f1ae2e32 → 40c6d79fb); `"cohere2"` first at v0.5.5 (llama/llama-arch.cpp,
    base 46e3556e0), the release after llama.cpp PR #10900 ("add support for Cohere2ForCausalLM", December 2024);
    v0.3.14's submodule llm/llama.cpp pins 3f1ae2e32, the commit v0.4.0 vendored, and that copy names "gemma2".
    Before this, each of these answered "not checked" (v0.5.8 was the oldest release read)."""
    refused = plan(model="olmo-2-13b", gpu="rtx-4090", runtime="ollama==0.5.1").allocation.refusal
    assert refused.startswith("Ollama 0.5.1 cannot load this model") and "v0.5.2" in refused
    assert plan(model="olmo-2-13b", gpu="rtx-4090", runtime="ollama==0.5.2").allocation.refusal is None
    refused = plan(model="command-r7b", gpu="rtx-4090", runtime="ollama==0.5.4").allocation.refusal
    assert "cohere2" in refused and "v0.5.5" in refused
    assert plan(model="command-r7b", gpu="rtx-4090", runtime="ollama==0.5.5").allocation.refusal is None
    from runlocal.runtimes.arch_support import arch_refusal
    refused, how = arch_refusal("ollama", "0.3.14", "gemma2")
    assert refused is None and "v0.3.14" in how and "v0.4.0:llama/llama.cpp" in how
    # older than v0.3.14: a name v0.3.14 lacks is refused (names are added, never removed), one it holds is not read
    assert arch_refusal("ollama", "0.3.0", "olmo2")[0] is not None
    assert "not checked" in arch_refusal("ollama", "0.3.0", "gemma2")[1]


def test_no_kv_cache_type_before_ollama_0_5_0():
    # llama-3.1-8b at 64k: f16 KV = 2 × 32 layers × 8 heads × 128 × 2 B × 65,536 = 8 GiB; q8_0 (34 B per 32 values)
    # = 8 GiB × 34/64 = 4.25 GiB. v0.5.0 offers it; v0.3.0 has no variable, so no such fix
    assert 2 * 32 * 8 * 128 * 2 * 65536 == 8 << 30 and (8 << 30) * 34 // 64 == int(4.25 * (1 << 30))
    ask = dict(model="llama-3.1-8b", gpu="rtx-3060", ctx=65536)
    new = plan(**ask, runtime="ollama==0.5.0")
    assert any("OLLAMA_KV_CACHE_TYPE=q8_0" in f.command and "4.25 GiB" in f.effect for f in new.fixes)
    old = plan(**ask, runtime="ollama==0.3.0")
    assert old.fixes and not [f for f in old.fixes if "OLLAMA_KV_CACHE_TYPE" in f.command]
    asked = plan(**ask, runtime="ollama==0.3.0", kv_cache="q8_0")
    assert asked.allocation.settings.cache_type_k == "f16" and "OLLAMA_KV_CACHE_TYPE" not in asked.command
    assert any("PR #6279" in a for a in asked.allocation.assumptions)


def test_vllm_releases_before_the_model_type_are_refused():
    for model, before, first in (("gpt-oss-20b", "0.10.0", "0.10.1"), ("qwen3-8b", "0.8.3", "0.8.4"),
                                 ("qwen3-30b-a3b", "0.8.3", "0.8.4"), ("gemma-3-12b", "0.7.3", "0.8.0")):
        old = plan(model=model, gpu="h100", runtime=f"vllm=={before}")
        assert old.verdict == "does_not_fit", (model, before)
        assert f"vLLM {before} cannot load this model" in old.allocation.refusal
        assert f"First served by vLLM {first}" in old.allocation.refusal
        assert plan(model=model, gpu="h100", runtime=f"vllm=={first}").allocation.refusal is None or \
            "cannot load" not in plan(model=model, gpu="h100", runtime=f"vllm=={first}").allocation.refusal
    # a model type the table does not hold is planned (not refused)
    assert "cannot load" not in (plan(model="llama-3.1-8b", gpu="h100", runtime="vllm==0.5.0").allocation.refusal
                                 or "")
