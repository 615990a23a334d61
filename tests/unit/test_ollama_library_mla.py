"""The Ollama library's DeepSeek blobs (deepseek-v2, deepseek-v3, deepseek-r1 tags) have no
deepseek2.attention.key_length_mla: they were published before llama.cpp PR #12801 wrote it, and Ollama's own converter
never writes it (ollama/ollama convert/convert_deepseek2.go at 3b2b253ee writes key_length = qk_nope + qk_rope,
value_length = v_head_dim, head_count_kv = n_heads). Both of Ollama's engines then cache every head's K and V, in every
release, whatever the MLA era of the llama.cpp it runs (data/ollama_tags.json mla_key_about). A Hub GGUF pulled as
hf.co/… or an imported file follows the release's era (the file assumed to carry the key; not read offline).
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.model.catalog import lookup
from runlocal.runtimes.published import library_mla_cache

MiB = 1 << 20


def _plan(model: str, runtime: str, ctx: int, quant: str | None = None, gpu: str = "h100"):
    plan, _ = check(CheckRequest(model=model, runtime=runtime, gpu=gpu, ctx=str(ctx), parallel=1, quant=quant,
                                 use_measurements=False))
    return plan


@pytest.mark.parametrize("release", ["ollama", "ollama==0.30.0", "ollama==0.32.13"])
@pytest.mark.parametrize("ctx,logged_mib", [(2048, 540), (4096, 1080), (8192, 2160)])
def test_a_library_deepseek_lite_caches_every_head_as_ollama_0_32_13_logged(release, ctx, logged_mib):
    # Ollama 0.32.13, llama runner, deepseek-coder-v2:16b-lite-instruct-q5_K_M on an RTX 5080, f16 KV, one slot:
    # "CUDA0 KV buffer size = 540.00 MiB" / "1080.00 MiB" / "2160.00 MiB" at 2,048 / 4,096 / 8,192 cells
    # (github.com/bricelancasterwcp-sudo/assay docs/superpowers/evidence/mla-kv-2026-08-27/VERDICT.md at d25af189).
    # DeepSeek-V2-Lite has the same attention (27 layers, 16 heads, qk_nope 128 + qk_rope 64, v_head_dim 128). By hand:
    #   27 × 16 × (192 + 128) × 2 B = 276,480 B per token;  × 2,048 = 566,231,040 B = 540 MiB
    assert 27 * 16 * (192 + 128) * 2 * ctx == logged_mib * MiB
    plan = _plan("deepseek-v2-lite", release, ctx, quant="Q5_K_M")
    a = plan.allocation
    assert a.kv_bytes_per_token == 276_480
    assert sum(d.kv_cache for d in a.devices) == logged_mib * MiB
    mla = next(s for s in plan.steps if s.label == "MLA cache")
    assert mla.value == "heads" and "deepseek-v2:16b-lite-chat-q5_K_M" in mla.source and "0.32.13" in mla.source


@pytest.mark.parametrize("release", ["ollama", "ollama==0.6.7", "ollama==0.24.0", "ollama==0.5.8"])
def test_deepseek_r1_671b_from_the_library_is_every_head_in_every_release(release):
    # review17c finding 1 by hand: 61 layers × 128 heads × (192 + 128) × 2 B = 4,997,120 B per token (it was planned
    # 70,272 / 132,736 B, the latent cache); ollama/ollama#9248 logged the same widths (K 23,424 MiB, V 15,616 MiB at
    # 8,192 cells: 61 × 128 × 192 × 2 × 8192 and 61 × 128 × 128 × 2 × 8192)
    assert 61 * 128 * (192 + 128) * 2 * 8192 == (23424 + 15616) * MiB
    plan = _plan("deepseek-r1", release, 8192, quant="Q4_K_M", gpu="8xh200")
    assert plan.allocation.kv_bytes_per_token == 4_997_120
    assert sum(d.kv_cache for d in plan.allocation.devices) == (23424 + 15616) * MiB


def test_a_tag_the_library_lacks_is_imported_and_follows_the_release():
    # deepseek-v2's library tags are the k-quants; IQ4_XS is imported from a GGUF made with today's converter, which
    # writes key_length_mla: the current release caches the latent K alone, 27 × (512 + 64) × 2 B = 31,104 B per token
    model = lookup("deepseek-v2-lite")
    assert library_mla_cache(model, "IQ4_XS") is None
    assert library_mla_cache(model, "Q4_K_M") is not None
    assert _plan("deepseek-v2-lite", "ollama", 4096, quant="IQ4_XS").allocation.kv_bytes_per_token == 31_104


def test_llamacpp_plans_of_catalog_deepseek_models_are_unchanged():
    # the rule is Ollama's pull, not the model: llama-server -hf pulls a GGUF with the key (27 × 576 × 2 = 31,104 B;
    # DeepSeek-R1: 61 × 576 × 2 = 70,272 B, the latent K alone)
    assert _plan("deepseek-v2-lite", "llama.cpp", 4096, quant="Q5_K_M").allocation.kv_bytes_per_token == 27 * 576 * 2
    assert _plan("deepseek-r1", "llama.cpp", 8192, gpu="8xh200").allocation.kv_bytes_per_token == 61 * 576 * 2


def test_models_without_mla_are_untouched():
    assert library_mla_cache(lookup("deepseek-r1-distill-qwen-7b"), "Q4_K_M") is None
