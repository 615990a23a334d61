"""Ollama's flash attention with OLLAMA_FLASH_ATTENTION unset, per release (runtimes/ollama_flash.py), as read in
ollama/ollama llm/server.go and fs/ggml/ggml.go at the release tags: off before v0.11.8; then on for the
architectures GGML.FlashAttention() lists (gpt-oss from v0.11.8, qwen3 from v0.12.4 …); from v0.13.4 llama.cpp's
"auto" for the models the llama.cpp runner runs; from v0.30 llama-server's auto for every model. A quantized KV cache
type is dropped to f16 where flash attention is not on (before v0.30)."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.runtimes.ollama_flash import ollama_flash

GiB = 1 << 30


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


@pytest.fixture(autouse=True)
def _unset(monkeypatch):
    for name in ("OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE", "OLLAMA_NUM_PARALLEL", "OLLAMA_CONTEXT_LENGTH"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("version, arch, asked, flash", [
    ((0, 11, 7), "gptoss", "auto", "off"),       # v0.11.7: fa := envconfig.FlashAttention(), nothing else
    ((0, 11, 7), "llama", "on", "on"),           # OLLAMA_FLASH_ATTENTION=1
    ((0, 11, 8), "gptoss", "auto", "auto"),      # 85ccf7354 (#11996): FlashAttention() lists gptoss, gpt-oss
    ((0, 12, 3), "qwen3", "auto", "off"),        # v0.12.3's list: gpt-oss only
    ((0, 12, 4), "qwen3", "auto", "auto"),       # v0.12.4 adds qwen3, qwen3moe
    ((0, 12, 3), "gptoss", "off", "auto"),       # before fdb109469 (v0.12.4): env || list, =0 cannot turn it off
    ((0, 12, 4), "gptoss", "off", "off"),        # from v0.12.4 it can
    ((0, 13, 3), "llama", "auto", "off"),        # not listed, before the llama.cpp runner's auto mode
    ((0, 13, 4), "llama", "auto", "auto"),       # bd6c1d6b4 (#13052): llama runs on the llama.cpp runner, auto
    ((0, 13, 4), "llama4", "auto", "off"),       # llama4 is the Go engine's (OllamaEngineRequired), not listed
    ((0, 30, 0), "llama", "auto", "auto"),       # llama-server for every model: --flash-attn auto
])
def test_each_release_s_default(version, arch, asked, flash):
    assert ollama_flash(version, arch, asked).flash == flash


def test_a_quantized_kv_type_needs_flash_attention_set_on_the_llama_cpp_runner():
    # v0.13.4–v0.29 llama.cpp runner: "OLLAMA_FLASH_ATTENTION must be enabled to use a quantized
    # OLLAMA_KV_CACHE_TYPE" — auto does not keep it; the Go engine keeps it wherever flash attention is on
    assert not ollama_flash((0, 20, 0), "llama", "auto").keeps_quantized_kv
    assert ollama_flash((0, 20, 0), "llama", "on").keeps_quantized_kv
    assert ollama_flash((0, 20, 0), "qwen3", "auto").keeps_quantized_kv
    assert ollama_flash(None, "llama", "auto").keeps_quantized_kv      # v0.30+: llama-server decides (auto on)


def test_before_v0_11_8_llama_3_1_runs_without_flash_attention_and_the_fix_turns_it_on():
    # Llama 3.1 8B at 131,072 tokens, ubatch 512, 32 heads: the unfused KQ scores alone are
    # 131,072 × 512 × 32 × 4 B (f32) = 8 GiB of compute buffer on the GPU; with flash attention they are gone
    assert 131072 * 512 * 32 * 4 == 8 * GiB
    old = plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="ollama==0.11.0", ctx=131072)
    assert old.settings.llamacpp.flash_attn == "off"
    assert max(d.compute for d in old.allocation.devices if d.kind != "cpu") > 8 * GiB
    first = old.fixes[0]
    assert first.title == "Turn on flash attention (OLLAMA_FLASH_ATTENTION=1)" and first.cost == 0
    assert "OLLAMA_FLASH_ATTENTION=1" in first.command
    assert "OLLAMA_FLASH_ATTENTION=0" not in (old.command or "")      # off is that release's default: not spelled
    # the current release (llama-server, --flash-attn auto) plans it on: under 1 GiB of compute buffer
    now = plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="ollama", ctx=131072)
    assert max(d.compute for d in now.allocation.devices if d.kind != "cpu") < GiB


def test_gpt_oss_wants_flash_attention_from_v0_11_8():
    # ollama/ollama issue #12606 (a v0.11.8–v0.12.3 server, 2025-11): gpt-oss:20b logs "model wants flash
    # attention" then "enabling flash attention" (server.go:200, :217) with OLLAMA_FLASH_ATTENTION unset
    p = plan(model="gpt-oss-20b", gpu="rtx-4090", runtime="ollama==0.12.3")
    assert p.settings.llamacpp.flash_attn != "off"
    assert not any(f.title.startswith("Turn on flash attention") for f in p.fixes)


def test_a_quantized_kv_type_without_flash_attention_is_an_f16_cache_before_v0_30():
    # v0.12.0, Llama 3.1 8B (not listed): OLLAMA_KV_CACHE_TYPE=q8_0 without flash attention logs "quantized kv cache
    # requested but flash attention disabled" and runs an f16 cache: 131,072 × 32 layers × 8 KV heads × 128 × 2 × 2 B
    # = 16 GiB, not q8_0's 8.5 GiB
    assert 131072 * 32 * 8 * 128 * 2 * 2 == 16 * GiB
    p = plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="ollama==0.12.0", ctx=131072, kv_cache="q8_0")
    assert p.settings.cache_type_k == p.settings.cache_type_v == "f16"
    assert sum(d.kv_cache for d in p.allocation.devices) == 16 * GiB
    assert any("OLLAMA_KV_CACHE_TYPE=q8_0 ignored without flash attention" in a for a in p.allocation.assumptions)
    # asked together with flash attention, the release keeps it
    on = plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="ollama==0.12.0", ctx=131072, kv_cache="q8_0",
              flash_attn="on")
    assert on.settings.cache_type_k == "q8_0"


@pytest.mark.parametrize("version, arch, asked, dims, flash", [
    ((0, 12, 4), "gemma2", "on", (256, 256), "off"),     # gemma2 refused from v0.11.11 (SupportsFlashAttention)
    ((0, 11, 10), "gemma2", "on", (256, 256), "on"),     # v0.11.5–v0.11.10: only the K/V test
    ((0, 11, 3), "gpt_oss", "on", (64, 64), "off"),      # gptoss refused v0.11.2–v0.11.4, even when set …
    ((0, 11, 5), "gpt_oss", "on", (64, 64), "on"),       # … accepted again from v0.11.5
    ((0, 12, 4), "deepseek_v2", "on", (576, 512), "off"),  # key_length ≠ value_length (MLA)
    ((0, 12, 4), "llama", "on", (128, 128), "on"),
    ((0, 20, 0), "gemma2", "auto", (256, 256), "auto"),  # the llama.cpp runner: unset stays llama.cpp's auto …
    ((0, 20, 0), "gemma2", "on", (256, 256), "off"),     # … set to 1, Ollama's check turns it off
    ((0, 19, 0), "grok", "on", (128, 128), "off"),       # grok refused from v0.19.0
    ((0, 30, 0), "gemma2", "on", (256, 256), "on"),      # llama-server: no such check
])
def test_ollamas_own_model_check(version, arch, asked, dims, flash):
    # fs/ggml/ggml.go GGML.SupportsFlashAttention read at v0.5.0, v0.11.2, v0.11.5, v0.11.11, v0.17.1 and v0.19.0;
    # llm/server.go: "flash attention enabled but not supported by model" → fa = false
    got = ollama_flash(version, arch, asked, dims)
    assert got.flash == flash
    if flash == "off":
        assert not got.keeps_quantized_kv


def test_a_refused_model_drops_a_quantized_kv_type_even_with_flash_attention_asked():
    # v0.12.4, Gemma 2 9B, OLLAMA_FLASH_ATTENTION=1 and OLLAMA_KV_CACHE_TYPE=q8_0: SupportsFlashAttention refuses gemma2,
    # so flash attention is off and the cache f16 (42 layers × 8 KV heads × 256 × 2 × 2 B = 344,064 B/token)
    p = plan(model="gemma-2-9b", gpu="rtx-4090", runtime="ollama==0.12.4", ctx=8192, kv_cache="q8_0", flash_attn="on")
    assert p.settings.cache_type_k == p.settings.cache_type_v == "f16"
    assert any("Ollama's own check refuses flash attention for gemma2" in a for a in p.allocation.assumptions)
