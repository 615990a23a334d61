"""Ollama's flash attention when OLLAMA_FLASH_ATTENTION is unset, per release, and what it does to a quantized
OLLAMA_KV_CACHE_TYPE. Read in ollama/ollama llm/server.go NewLlamaServer and fs/ggml/ggml.go at the release tags:

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
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

FA_LIST_FROM = (0, 11, 8)          # 85ccf7354 (#11996)
FA_ENV_OVERRIDES_FROM = (0, 12, 4)  # fdb109469: OLLAMA_FLASH_ATTENTION=0 wins over the list
FA_AUTO_RUNNER_FROM = (0, 13, 4)   # bd6c1d6b4 (#13052): the llama.cpp runner's auto mode
LLAMA_SERVER_FROM = (0, 30, 0)     # 9db4bda: llama-server for every GGML model
MAP_PATH = "ollama_flash_attention.json"


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


def ollama_flash(version: tuple[int, ...] | None, arch: str, asked: str) -> OllamaFlash:
    """This release's flash attention for a model of ``arch`` (GGUF general.architecture), ``asked`` being
    OLLAMA_FLASH_ATTENTION as the request has it ('on', 'off', or 'auto' where unset)."""
    if version is None or version >= LLAMA_SERVER_FROM:
        return OllamaFlash(asked, True, "")
    if version < FA_LIST_FROM:
        flash = "on" if asked == "on" else "off"
        return OllamaFlash(flash, flash == "on", "Ollama before v0.11.8: flash attention off unless "
                           "OLLAMA_FLASH_ATTENTION=1 (llm/server.go NewLlamaServer)")
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
