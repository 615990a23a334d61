"""Ollama's flash attention when OLLAMA_FLASH_ATTENTION is unset, per release, and what it does to a quantized
OLLAMA_KV_CACHE_TYPE. Read in ollama/ollama llm/server.go NewLlamaServer and fs/ggml/ggml.go at the release tags:

  < 0.1.39        none: no OLLAMA_FLASH_ATTENTION, the runner never gets --flash-attn (e15307fdf #4120, 38255d2af
                  #4580 brought both in v0.1.39); v0.1.39 alone drops it where a layer stays off the GPU (lifted by
                  a50a87a7b #4734 in v0.1.40), and up to v0.4.x it needs CUDA compute capability 7+ or Metal
                  (llm/server.go; v0.5.0 asks gpus.FlashAttentionSupported()): words only here.
  ≤ 0.11.7        off unless OLLAMA_FLASH_ATTENTION=1 (``fa := envconfig.FlashAttention()``, a Bool defaulting to false).
  0.11.8 – 0.13.3 on for the architectures GGML.FlashAttention() lists (85ccf7354, "gptoss: enable flash attention by
                  default (#11996)": gpt-oss first, qwen3/qwen3moe from v0.12.4, gemma3 from v0.12.6 …), where every GPU
                  supports it; off for the rest. OLLAMA_FLASH_ATTENTION=0 turns a listed one off only from v0.12.4
                  (fdb109469, envconfig.FlashAttention(f.FlashAttention())); before, ``env || list``.
  0.13.4 – 0.29   the Go engine (KV.OllamaEngineRequired's architectures) keeps the list; the llama.cpp runner runs the
                  rest with llama.cpp's flash attention "auto" (bd6c1d6b4, "flash attn: add auto mode for llama engine
                  (#13052)") unless the variable is set.
  ≥ 0.30          llama-server for every model, --flash-attn auto unless the variable is set (llm/llama_server.go
                  LlamaServerFlashAttention): the planner's default.

A quantized KV cache type is honoured only with flash attention on, and silently dropped to f16 otherwise before
v0.30 ("quantized kv cache requested but flash attention disabled"; the v0.13.4+ llama.cpp runner: "OLLAMA_FLASH_
ATTENTION must be enabled to use a quantized OLLAMA_KV_CACHE_TYPE", so its auto mode does not keep one either). From
v0.30 llama-server itself refuses a quantized V cache without flash attention (runtimes/ollama.py).
The lists per release: data/ollama_flash_attention.json (measurements/ollama_builds/flash_attention_map.py).

Before v0.30 Ollama also refuses flash attention for a model its own check rejects (fs/ggml/ggml.go
GGML.SupportsFlashAttention, llm/server.go "flash attention enabled but not supported by model" → fa = false): an
embedding model (``{arch}.pooling_type`` set; not in the catalog), a key_length ≠ value_length (K ≠ V per head: the
library's DeepSeek MLA blobs) or either zero, and by release some architectures: gptoss refused v0.11.2–v0.11.4,
gemma2 from v0.11.11, grok too from v0.19.0; qwen35 / qwen35moe / qwen3next accepted before the K/V test from v0.17.1
(the body read at every release tag where it changed: v0.5.0, v0.11.2, v0.11.5, v0.11.11, v0.17.1, v0.19.0). Where it
refuses, flash attention is off — on the llama.cpp runner of v0.13.4–v0.29 only where OLLAMA_FLASH_ATTENTION=1 was
set (unset stays llama.cpp's auto) — and a quantized KV cache type is dropped to f16.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

FA_ENV_FROM = (0, 1, 39)           # e15307fdf (#4120) / 38255d2af (#4580): OLLAMA_FLASH_ATTENTION, --flash-attn
FA_LIST_FROM = (0, 11, 8)          # 85ccf7354 (#11996)
FA_ENV_OVERRIDES_FROM = (0, 12, 4)  # fdb109469: OLLAMA_FLASH_ATTENTION=0 wins over the list
FA_AUTO_RUNNER_FROM = (0, 13, 4)   # bd6c1d6b4 (#13052): the llama.cpp runner's auto mode
LLAMA_SERVER_FROM = (0, 30, 0)     # 9db4bda: llama-server for every GGML model
# OLLAMA_KV_CACHE_TYPE: 1bdab9fdb "llm: introduce k/v context quantization (vRAM improvements) (#6279)", 2024-12-04;
# envconfig/config.go has it at v0.5.0, not at v0.4.7: before, every release's KV cache is f16 (review19 finding 4)
KV_CACHE_TYPE_FROM = (0, 5, 0)
MAP_PATH = "ollama_flash_attention.json"
# GGML.SupportsFlashAttention by release: (first release, accepted before the K/V test, refused architectures)
SUPPORTS_FA = (((0, 5, 0), (), ()), ((0, 11, 2), (), ("gptoss",)), ((0, 11, 5), (), ()),
               ((0, 11, 11), (), ("gemma2",)), ((0, 17, 1), ("qwen35", "qwen35moe", "qwen3next"), ("gemma2",)),
               ((0, 19, 0), ("qwen35", "qwen35moe", "qwen3next"), ("gemma2", "grok")))


@dataclass(frozen=True)
class OllamaFlash:
    """What a release does: ``flash`` as the llama.cpp planner takes it (on / off / auto), whether a quantized
    KV cache type is kept, and why (for the plan's assumptions)."""

    flash: str
    keeps_quantized_kv: bool
    why: str


def _key(arch: str) -> str:
    """An architecture compared without case or separators: the spec's HF model_type (gpt_oss, qwen3_moe) against
    the GGUF names Ollama lists (gptoss, qwen3moe)."""
    return re.sub(r"[^a-z0-9]", "", arch.lower())


@lru_cache(maxsize=1)
def _lists() -> tuple[tuple[tuple[int, ...], str, frozenset[str], frozenset[str]], ...]:
    from importlib.resources import files

    doc = json.loads(files("runlocal.data").joinpath(MAP_PATH).read_text(encoding="utf-8"))
    rows = [(tuple(int(x) for x in v.split(".")), v, frozenset(map(_key, r["flash_attention"])),
             frozenset(map(_key, r["engine"]))) for v, r in doc["releases"].items()]
    return tuple(sorted(rows))


def _at(version: tuple[int, ...]) -> tuple[str, frozenset[str], frozenset[str]]:
    """(the mapped release at or before this one, its flash-attention list, its Go-engine list)."""
    rows = [row for row in _lists() if row[0] <= version[:3]] or [_lists()[0]]
    _, v, fa, engine = rows[-1]
    return v, fa, engine


def model_refuses_flash(version: tuple[int, ...], arch: str, k_dim: int, v_dim: int) -> str | None:
    """Why GGML.SupportsFlashAttention rejects this model in this (pre-v0.30) release, or None."""
    rows = [row for row in SUPPORTS_FA if version[:3] >= row[0]]
    if not rows:
        return None
    first, accepted, refused = rows[-1]
    where = f"fs/ggml/ggml.go SupportsFlashAttention, as from v{'.'.join(map(str, first))}"
    if _key(arch) in accepted:
        return None
    if _key(arch) in refused:
        return f"Ollama's own check refuses flash attention for {arch} ({where})"
    if not k_dim or not v_dim or k_dim != v_dim:
        return (f"Ollama's own check refuses flash attention where key_length ≠ value_length (K {k_dim} ≠ V {v_dim} "
                f"per head; {where})")
    return None


def ollama_flash(version: tuple[int, ...] | None, arch: str, asked: str,
                 kv_dims: tuple[int, int] = (1, 1)) -> OllamaFlash:
    """This release's flash attention for a model of ``arch`` (GGUF general.architecture) whose heads cache K / V
    rows of ``kv_dims``, ``asked`` being OLLAMA_FLASH_ATTENTION as the request has it ('on', 'off', or 'auto' where
    unset)."""
    if version is None or version >= LLAMA_SERVER_FROM:
        return OllamaFlash(asked, True, "")
    flash = _by_list(version, arch, asked)
    refused = model_refuses_flash(version, arch, *kv_dims)
    runner = version >= FA_AUTO_RUNNER_FROM and _key(arch) not in _at(version)[2]
    if refused and flash.flash != "off" and (not runner or asked == "on"):
        return OllamaFlash("off", False, f"{refused}: off (llm/server.go \"flash attention enabled but not supported "
                           "by model\"), a quantized KV cache type dropped to f16")
    return flash


def _early_flash(version: tuple[int, ...], flash: str) -> str:
    """What limited flash attention, once asked for, before v0.5.0 (llm/server.go NewLlamaServer at the tags)."""
    if flash != "on" or version >= KV_CACHE_TYPE_FROM:
        return ""
    return ("; before v0.5.0 only on CUDA compute capability 7+ or Metal (\"only cuda (compute capability 7+) and metal "
            "support flash attention\")" + ("; v0.1.39 drops it where a layer stays off the GPU (\"partial offloading "
            "does not support flash attention\", lifted by a50a87a7b in v0.1.40)" if version[:3] == (0, 1, 39) else ""))


def _by_list(version: tuple[int, ...], arch: str, asked: str) -> OllamaFlash:
    """ollama_flash before the model's own check: the release's default and list."""
    if version < FA_ENV_FROM:
        return OllamaFlash("off", False, "Ollama before v0.1.39: no flash attention (no OLLAMA_FLASH_ATTENTION, no "
                           "--flash-attn: e15307fdf, #4120, brought them in v0.1.39); no OLLAMA_KV_CACHE_TYPE before "
                           "v0.5.0 (ollama/ollama PR #6279): an f16 KV cache")
    if version < FA_LIST_FROM:
        flash = "on" if asked == "on" else "off"
        typed = version >= KV_CACHE_TYPE_FROM
        return OllamaFlash(flash, flash == "on" and typed, "Ollama before v0.11.8: flash attention off unless "
                           "OLLAMA_FLASH_ATTENTION=1 (llm/server.go NewLlamaServer)" + _early_flash(version, flash)
                           + ("" if typed else
                           "; no OLLAMA_KV_CACHE_TYPE before v0.5.0 (ollama/ollama PR #6279, envconfig/config.go): "
                           "an f16 KV cache"))
    mapped, wants, go_engine = _at(version)
    listed = _key(arch) in wants
    if version >= FA_AUTO_RUNNER_FROM and _key(arch) not in go_engine:
        flash = asked                          # llama.cpp runner: auto unless set; a quantized KV needs it set on
        return OllamaFlash(flash, flash == "on", f"Ollama v0.13.4–v0.29 runs {arch} on its llama.cpp runner: flash "
                           "attention auto unless OLLAMA_FLASH_ATTENTION is set, a quantized KV cache type only with "
                           "it set to 1 (llm/server.go NewLlamaServer, #13052)")
    if asked == "on" or (listed and (asked != "off" or version < FA_ENV_OVERRIDES_FROM)):
        flash = "auto" if asked != "on" else "on"   # listed: on where every GPU supports it, as auto decides here
    else:
        flash = "off"
    why = (f"Ollama v0.11.8–v0.29: flash attention on by default only for the architectures fs/ggml/ggml.go "
           f"FlashAttention() lists ({arch} {'is' if listed else 'is not'} listed at v{mapped})"
           + ("; OLLAMA_FLASH_ATTENTION=0 does not turn it off before v0.12.4" if listed and asked == "off"
              and version < FA_ENV_OVERRIDES_FROM else ""))
    return OllamaFlash(flash, flash != "off", why)
