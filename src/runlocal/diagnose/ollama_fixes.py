"""Ollama's spellings of the knobs a fix turns, for an Ollama log: the Modelfile and environment commands that set
them, and which llama-server flag each one is, so that a fix computed from the log's numbers replaces the knowledge
base's line for the same knob whichever spelling either uses (fixes.py ``_flags`` / ``_superseded``).

Which option is which flag is Ollama's own source (ollama/ollama fb30760, v0.33.0-rc2, llm/llama_server.go):
startLlamaServer passes ``-c num_ctx × parallel`` and ``-ngl num_gpu``; appendBatchArgs passes num_batch as ``-b``
and ``-ub`` (before v0.30 its runner set n_ubatch = num_batch, llama/llama.go NewContextParams);
OLLAMA_CONTEXT_LENGTH is the default num_ctx (server/routes.go), OLLAMA_NUM_PARALLEL the -np, OLLAMA_FLASH_ATTENTION
--flash-attn and OLLAMA_KV_CACHE_TYPE both --cache-type-k and -v (envconfig/config.go, llm/llama_server.go).

Pure computation over strings; imports nothing heavy.
"""

from __future__ import annotations

import re
from typing import Any

# each Ollama spelling → the llama-server flags it sets (the names fixes._flags gives those flags)
_OPTION_FLAGS = {
    "num_batch": ("-ub",), "num_ctx": ("-c",), "num_gpu": ("-ngl",),
}
_ENV_FLAGS = {
    "OLLAMA_CONTEXT_LENGTH": ("-c",), "OLLAMA_NUM_PARALLEL": ("-np",), "OLLAMA_FLASH_ATTENTION": ("-fa",),
    "OLLAMA_KV_CACHE_TYPE": ("--cache-type-k", "--cache-type-v"),
}
# a Modelfile PARAMETER line, `/set parameter` in `ollama run`, or the API's "options": {"name": value}
_OPTION = re.compile(r"(?:PARAMETER|/set parameter)\s+(\w+)|\"(\w+)\"\s*:\s*[\d\"-]", re.I)
_ENV = re.compile(r"\b(OLLAMA_[A-Z_]+)=")
_OLLAMA_COMMAND = re.compile(r"\bollama\b|\bPARAMETER\b|/set parameter|\"options\"|\bOLLAMA_[A-Z_]+=")


def is_ollama_command(command: str) -> bool:
    """Whether ``command`` is one of Ollama's (a Modelfile, an `ollama` line, an option or OLLAMA_* variable)."""
    return bool(_OLLAMA_COMMAND.search(command or ""))


def knob_flags(command: str) -> frozenset[str]:
    """The llama-server flags an Ollama command sets through its options and variables (num_batch → -ub, num_ctx and
    OLLAMA_CONTEXT_LENGTH → -c, num_gpu → -ngl, …); any other OLLAMA_* variable stands for itself, so a line that also
    sets one is never taken for a line that sets only the flags. `ollama create … -f Modelfile`'s -f is no knob."""
    flags: set[str] = set()
    for m in _OPTION.finditer(command or ""):
        name = (m.group(1) or m.group(2)).lower()
        flags.update(_OPTION_FLAGS.get(name, (name,)))
    for var in _ENV.findall(command or ""):
        flags.update(_ENV_FLAGS.get(var, (var,)))
    return frozenset(flags)


def modelfile(param: str, value: object, tag: str) -> str:
    """The line that sets one per-model option: a Modelfile FROM the model with its PARAMETER, created as a new name
    (runtimes/ollama.py modelfile_command, the one used by `runlocal check`'s commands too)."""
    from ..runtimes.ollama import modelfile_command

    return modelfile_command("MODEL", [(param, value)], f"MODEL-{tag}")


# the llama-server flag each Ollama option is passed as (llm/llama_server.go startLlamaServer)
LLAMA_FLAG = {"num_batch": "-ub", "num_ctx": "-c", "num_gpu": "-ngl"}


def gguf_name(ex: dict[str, Any]) -> str:
    """The model file the log names, or a placeholder for it."""
    model = str(ex.get("model") or "")
    return model if model.lower().endswith(".gguf") else "MODEL.gguf"


_MODEL_FILE = re.compile(r"(?:^|\s)-m\s+(\S+)")


def same_file(a: str, b: str) -> bool:
    """Whether two llama-server commands load the same file: another -m (a smaller quantization, MODEL-Q4_K_M.gguf)
    is another fix, not the same knob turned; the knowledge base's placeholder MODEL.gguf stands for the log's file."""
    ma, mb = _MODEL_FILE.search(a), _MODEL_FILE.search(b)
    if ma is None or mb is None:
        return True
    return ma.group(1) == mb.group(1) or "MODEL.gguf" in (ma.group(1), mb.group(1))


def set_option(param: str, value: object, tag: str, ollama: bool, ex: dict[str, Any]) -> tuple[str, str]:
    """(the setting as its runtime spells it, the command that sets it): Ollama's ``param`` in a Modelfile for an
    Ollama log, else the llama-server flag Ollama would pass it as."""
    if ollama:
        return f"{param} {value}", modelfile(param, value, tag)
    flag = LLAMA_FLAG[param]
    return f"{flag} {value}", f"llama-server -m {gguf_name(ex)} {flag} {value}"


def knob(flag: str) -> str:
    """The Ollama option that sets llama-server's ``flag`` (llm/llama_server.go startLlamaServer passes
    num_ctx × parallel as -c and num_gpu as -ngl)."""
    return {"-c": "num_ctx", "-ngl": "num_gpu"}[flag]


def context_command(num_ctx: int, reads_env: bool, q8: bool = False) -> str:
    """The command that sets num_ctx: OLLAMA_CONTEXT_LENGTH for every model where the release reads it (v0.5.13+),
    else the model's Modelfile (``reads_env`` False)."""
    if not reads_env:
        return modelfile("num_ctx", num_ctx, f"ctx{num_ctx}")
    env = f"OLLAMA_CONTEXT_LENGTH={num_ctx}"
    return env + (" OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0" if q8 else "") + " ollama serve"


def share_command(bound: str, reads_env: bool, q8: bool = False) -> str:
    """A num_ctx of N, a share of the one that failed (``bound``: the comment that says which share)."""
    if not reads_env:
        return modelfile("num_ctx", "N", "smaller") + bound
    env = "OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0 " if q8 else ""
    return f"{env}OLLAMA_CONTEXT_LENGTH=N ollama serve{bound}"


# `VAR=value … ollama serve`: a second server started with the variables (the knowledge base's lines and the
# computed ones alike)
_SERVE_WITH_ENV = re.compile(r"^\s*((?:[A-Z][A-Z0-9_]*=\S+\s+)+)ollama serve\b")


def service_caveat(fix: dict[str, str]) -> dict[str, str]:
    """The fix with check's service caveat on its effect when its command starts `ollama serve` with variables
    (runtimes/flag_spelling.py ollama_service_note, the one function both use): where Ollama runs as a service this
    second server exits on the taken port and the service never sees the variables. Not for a line that moves the
    server to another port (OLLAMA_HOST): that one is meant to run beside the first."""
    m = _SERVE_WITH_ENV.match(fix.get("command") or "")
    if m is None:
        return fix
    env = m.group(1).split()
    if any(e.startswith("OLLAMA_HOST=") for e in env):
        return fix
    from ..runtimes.flag_spelling import ollama_service_note

    note = ollama_service_note(env, then="then run the model again")
    return dict(fix, effect="; ".join(filter(None, [fix.get("effect", ""), note])))


# the knowledge base's lines (data/errors/ollama-system-memory.md) that ollama_ram_fixes gives with the log's figures:
# the same command, so the figureless line gives way to it (fixes._superseded)
UNLOAD_COMMAND = "ollama ps && ollama stop OTHER_MODEL"
SMALLER_TAG_COMMAND = ("ollama run NAME:SMALLER_TAG   # NAME: your model; SMALLER_TAG: a lower quantization "
                       "ollama.com/library/NAME/tags lists, where it lists one (gpt-oss: MXFP4 only), or a smaller "
                       "model's tag")


# docs/linux.mdx "Updating": "Update Ollama by running the install script again"; the macOS and Windows apps update
# themselves (or a new download from ollama.com/download)
UPDATE_COMMAND = ("curl -fsSL https://ollama.com/install.sh | sh   # Linux; macOS/Windows: the app's update or "
                  "ollama.com/download. `ollama -v` shows the version you run")


def update_fix(since: str) -> dict[str, str]:
    """Update Ollama: a release whose llama.cpp splits its buffers below the per-allocation limit (``since``: the
    pull requests that brought the splitting)."""
    return {"title": "Update Ollama: a newer llama.cpp inside it splits its buffers below the limit",
            "command": UPDATE_COMMAND,
            "effect": f"{since}; builds since then place each buffer in pieces under the cap, so only a single "
                      "tensor larger than the cap can still fail"}


# Ollama's num_ctx when none is set and the log does not print one: 4,096 from v0.6.7, and from v0.15.5 on a machine
# with under 23 GiB of VRAM (runtimes/ollama_sched.py CTX_TIERS), the machines that meet "more system memory"
OLLAMA_DEFAULT_NUM_CTX = 4096
# the fix that says when a shorter context or a quantized KV cache can close a RAM shortfall; with it, the knowledge
# base's figureless context / KV-cache lines are not offered (fixes.with_computed_fixes)
KV_ONLY_IF = "A shorter num_ctx or a q8_0 KV cache closes it only if the KV cache is at least"
KV_KNOBS = re.compile(r"OLLAMA_CONTEXT_LENGTH|OLLAMA_KV_CACHE_TYPE|num_ctx")


def ram_gap_fixes(short: int, need: int, have: int, n_ctx: int | None) -> list[dict[str, str]]:
    """After "Free RAM" and "a smaller model": a shorter num_ctx or a quantized KV cache frees at most the KV cache,
    which the refusal does not print, so they close the gap only where that cache is at least the shortfall — at
    num_ctx n, shortfall / n bytes a token (review22 #12: gpt-oss:120b, 27.5 GiB short, was offered
    OLLAMA_CONTEXT_LENGTH=4096; its f16 cache is 36 KiB a token); and what does close it, the RAM the estimate needs."""
    from ..units import GiB, format_bytes

    ctx = n_ctx or OLLAMA_DEFAULT_NUM_CTX
    check = f"runlocal check MODEL --runtime ollama --ram {have >> 30}G"
    return [
        {"title": f"{KV_ONLY_IF} {format_bytes(short)}",
         "command": f"ollama ps   # CONTEXT: the num_ctx loaded; {check} --ctx N gives the KV cache at N",
         "effect": (f"they free only KV cache: at num_ctx {ctx:,} that takes {format_bytes(short // ctx)} a token or "
                    "more (f16: Llama-3.1-70B 320 KiB, gpt-oss 36 KiB in its full-attention layers), so for most "
                    "models no context closes a gap this size")},
        {"title": f"Or load it where {format_bytes(need)} fits: more free RAM, or a GPU that holds part of it",
         "command": f"runlocal check MODEL --runtime ollama --ram {-(-need // GiB)}G   # or --gpu YOUR_GPU",
         "effect": ("Ollama counts only what it cannot place on a GPU against RAM (data/errors/ollama-system-memory.md):"
                    f" {format_bytes(need)} free RAM loads it as estimated here")},
    ]
