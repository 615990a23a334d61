"""Concrete fixes computed from the figures a log contains, by the same planner `check` uses.

Two levels: from the log's own numbers alone (KV tokens, max_model_len, bytes requested/free),
and — when the log names a model runlocal can resolve offline and a GPU it knows — by re-planning.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from ..units import GiB
from . import device_fixes, kb, layer_fixes, ollama_fixes, ollama_room, runtime_note, sglang_serving, vllm_budget
from .offline_model import resolvable_offline
from .unified_gpu import on_unified_device
from .vulkan_backend import share_fixes, vendor_tools


def _b(n: Any) -> str:
    from ..units import format_bytes

    return format_bytes(int(n))


def _gib(n: Any) -> str:
    """GiB at two decimals, the precision vLLM's own start-up messages print."""
    return f"{float(n) / (1 << 30):.2f} GiB"


def _fix(title: str, command: str, effect: str) -> dict[str, str]:
    return {"title": title, "command": command, "effect": effect}


def _round_down(n: int, to: int = 256) -> int:
    """``n`` rounded down to a multiple of ``to`` (of 16, vLLM's block size, below ``to``); never above ``n``."""
    n = int(n)
    if n >= to:
        return n // to * to
    return n // 16 * 16 if n >= 16 else n


def _knob(runtime: str | None, flag: str) -> str:
    """llama-server's flag, or the Ollama option that sets it."""
    return ollama_fixes.knob(flag) if runtime == "ollama" else flag


_FLAG = re.compile(r"(?<!\S)(--?[A-Za-z][\w-]*)")


def _flags(command: str) -> frozenset[str]:
    """The option names a command sets ("--max-model-len", "-ngl"…), underscores read as dashes; an Ollama command's
    options and variables as the llama-server flags they set (num_batch: -ub, num_ctx: -c, …; ollama_fixes)."""
    if ollama_fixes.is_ollama_command(command):
        return ollama_fixes.knob_flags(command)
    return frozenset(f.replace("_", "-") for f in _FLAG.findall(command or ""))


def _superseded(command: str, by: list[dict[str, str]]) -> bool:
    """True when ``command`` is one of ``by``'s or only turns knobs one of them already sets with numbers."""
    flags = _flags(command)
    for f in by:
        if f["command"] == command:
            return True
        if flags and flags <= _flags(f["command"]) and ollama_fixes.same_file(command, f["command"]):
            return True
    return False



def _model_ref(ex: dict[str, Any]) -> str:
    return str(ex.get("model") or "MODEL")


# -- the release the log comes from: its version picks the planner's rules (runtimes/versions.py) and the command
# syntax that release accepts ------------------------------------------------------------------------------------
# llama.cpp -fa: a bare flag until flash_attn_type (on|off|auto) arrived. b6327 has it (mybigday/llama.node#102, "sync
# llama.cpp to b6327: deprecate flash_attn, introduce flash_attn_type (auto|on|off)", 2025-08-31; ggml-org/llama.cpp
# PR #15746 adds 1/0/-1 aliases on 2025-09-02); b6057 (2025-08-01, the log in ggml-org/llama.cpp#15009) predates it.
# Builds in between get the newer syntax.
FA_VALUE_BUILDS = (6057, 6327)
# Ollama reads OLLAMA_CONTEXT_LENGTH from v0.5.13 (ollama/ollama#9545 documents it; Aider-AI/aider#3485 "supports
# since v0.5.13"). OLLAMA_KV_CACHE_TYPE (ollama/ollama#6279) is missing from the server config v0.4.0 prints
# (ollama/ollama#7666) and present in v0.5.7's (ollama/ollama#9221). A log that prints its server config
# ("server config env=map[...]", every OLLAMA_* variable that build reads) answers directly.
OLLAMA_CONTEXT_ENV_FROM = (0, 5, 13)
OLLAMA_KV_TYPE_FROM = (0, 5, 7)
# vLLM: `vllm serve` from v0.5.2 (PR #5090; the docs switched to it once v0.5.2 was out, PR #6431); before, the module.
VLLM_SERVE_FROM = (0, 5, 2)
# vLLM's fp8 KV cache: "fp8_e5m2" from PR #2279 (merged late January 2024, v0.3.0); "fp8" as a choice beside it by
# v0.4.0 (issue #3990, 2024-04-11, asks when to use fp8 and when fp8_e5m2). Before v0.3.0 there is none.
VLLM_FP8_KV_FROM, VLLM_FP8_NAME_FROM = (0, 3, 0), (0, 4, 0)
_VERSION_KEYS = {"llama.cpp": "llamacpp_build", "vllm": "vllm_version", "ollama": "ollama_version"}


def log_release(ex: dict[str, Any], runtime: str | None):
    """The runtime's release as the log prints it (a runtimes.versions.RuntimeVersion), or None."""
    from ..errors import InputError
    from ..runtimes.versions import parse_version

    text = ex.get(_VERSION_KEYS.get(runtime or "", ""))
    if text is None or runtime is None:
        return None
    try:
        return parse_version(runtime, str(text))
    except InputError:
        return None


def runtime_spec(runtime: str, ex: dict[str, Any]) -> str:
    """'vllm==0.5.4' when the log prints vLLM's version (so the plan uses that release's rules), else the name."""
    release = log_release(ex, runtime)
    return f"{runtime}=={release.text}" if release is not None else runtime


def _ollama_reads(ex: dict[str, Any], variable: str, first_release: tuple[int, ...]) -> bool:
    """Whether the Ollama that wrote the log reads ``variable``: its printed server config, else its version
    (unknown: the current release, which reads both)."""
    env = ex.get("ollama_env_vars")
    if env:
        return variable in env
    release = log_release(ex, "ollama")
    return release is None or release.at_least(*first_release)


def _fa_flag(ex: dict[str, Any]) -> str:
    release = log_release(ex, "llama.cpp")
    return "-fa" if release is not None and release.key[0] <= FA_VALUE_BUILDS[0] else "-fa on"


def _vllm_fp8_name(ex: dict[str, Any]) -> str | None:
    """The --kv-cache-dtype value for an fp8 cache in the logged vLLM release (None: that release has none)."""
    release = log_release(ex, "vllm")
    if release is None or release.at_least(*VLLM_FP8_NAME_FROM):
        return "fp8"
    return "fp8_e5m2" if release.at_least(*VLLM_FP8_KV_FROM) else None


def _vllm_serve(ex: dict[str, Any]) -> str:
    release = log_release(ex, "vllm")
    if release is not None and not release.at_least(*VLLM_SERVE_FROM):
        return f"python -m vllm.entrypoints.openai.api_server --model {_model_ref(ex)}"
    return f"vllm serve {_model_ref(ex)}"


def vllm_kv_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """max_model_len above the KV pool: the pool's size is the largest context that starts."""
    tokens, mml = ex.get("kv_cache_tokens"), ex.get("max_model_len")
    needed, available = ex.get("kv_needed_bytes"), ex.get("kv_cache_bytes")
    if not tokens and mml and needed and available and 0 < available < needed:
        # vLLM V1 without the "estimated maximum model length": the KV cache is linear in the context
        tokens = int(int(mml) * available // needed)
    fixes = []
    if tokens:
        fit = _round_down(int(tokens), 256)
        fixes.append(_fix(f"Serve at most {fit:,} tokens per request",
                          f"{_vllm_serve(ex)} --max-model-len {fit}",
                          f"max_model_len {mml:,} → {fit:,} fits the {int(tokens):,}-token KV pool" if mml else
                          f"fits the {int(tokens):,}-token KV pool"))
        kv_dtype = str(ex.get("kv_cache_dtype") or "auto")
        fp8 = _vllm_fp8_name(ex)
        if fp8 and not kv_dtype.startswith("fp8"):
            doubled = _round_down(2 * int(tokens), 256)
            fixes.append(_fix("Store the KV cache in fp8 (half the bytes per token)",
                              f"{_vllm_serve(ex)} --kv-cache-dtype {fp8} --max-model-len {min(doubled, mml or doubled)}",
                              f"KV pool ≈ {2 * int(tokens):,} tokens; --max-model-len up to {doubled:,}"))
    if vllm_budget.shortfall(ex) is not None:   # a negative pool: sized from the log's own signed figure
        return fixes + vllm_budget.negative_pool_fixes(ex, _vllm_serve(ex))
    util = ex.get("gpu_memory_utilization")
    if util and float(util) < 0.95:
        fixes.append(_fix("Give vLLM a larger share of the GPU",
                          f"{_vllm_serve(ex)} --gpu-memory-utilization 0.95",
                          f"budget {float(util):.2f} → 0.95 of the GPU; the extra goes to the KV pool"))
    return fixes


def vllm_utilization_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """vLLM refused to start because less was free than utilization × total (vllm/v1/worker/gpu_worker.py
    init_device: "Free memory on device … on startup is less than desired GPU memory utilization"): the largest
    utilization the free memory allows, from the log's own figures, or freeing the GPU when almost nothing is free."""
    free, total, util = ex.get("free_bytes"), ex.get("total_bytes"), ex.get("gpu_memory_utilization")
    if not (free and total):
        return []
    fits = math.floor(free / total * 100) / 100
    # at the log's own precision (vLLM prints GiB to two decimals): the gap that failed is often a few hundredths
    # of a GiB (19.77 free against 19.84 asked), which three significant figures would print as two equal numbers
    held = f"{_b(total - free)} of the {_gib(total)} GPU was in use before vLLM started; {_gib(free)} was free"
    if fits < 0.1:
        return [_fix("Free the GPU first: other processes hold it",
                     "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv", held)]
    asked = ""
    if util:
        wanted = ex.get("requested_bytes") or float(util) * total   # the log's own figure where it prints one
        asked = (f"; {float(util):.2f} × {_gib(total)} = {_gib(wanted)} was asked for"
                 + (f", {_gib(wanted - free)} more than was free" if wanted > free else ""))
    return [_fix(f"Ask for at most {fits:.2f} of the GPU",
                 f"{_vllm_serve(ex)} --gpu-memory-utilization {fits:.2f}",
                 f"{held}{asked}; {fits:.2f} × {_gib(total)} = {_gib(fits * total)} fits in what is free "
                 "(the KV pool shrinks with it)")]


def sglang_balance_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """SGLang stopped because one rank had under 0.9 of this rank's free memory (model_runner.py
    init_torch_distributed, figures in GiB): how much less the least free GPU had, from the log's own two figures —
    what another process holds there, or the difference between two card sizes."""
    low, local = ex.get("sglang_min_free_bytes"), ex.get("sglang_local_free_bytes")
    if not (low and local and low < local):
        return []
    return [_fix(f"Free {_b(local - low)} on the least free GPU (or use GPUs of one size)",
                 "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                 f"the least free GPU had {_b(low)} free against {_b(local)} on this rank (SGLang stops below "
                 f"0.9 × {_b(local)} = {_b(0.9 * local)}): {_b(local - low)} there is held by another process, or "
                 "that card is smaller")]


def vllm_headroom_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """vLLM ran out while serving (an activation outside its budget, the engine then died): everything outside
    gpu_memory_utilization × total is what activations and CUDA graphs get, so lowering the share by the log's own
    shortfall (the failed request minus what was free, at least the request) leaves that room. The share the log
    states, else vLLM's default for the log (diagnose/vllm_budget.py default_share, vllm/config/cache.py)."""
    from .vllm_budget import default_share

    req, free, total = ex.get("requested_bytes"), ex.get("free_bytes"), ex.get("total_bytes")
    if not (req and total):
        return []
    short = max(int(req) - int(free or 0), 0) or int(req)   # at least the request itself (a block that would not split)
    util = float(ex.get("gpu_memory_utilization") or default_share(ex))
    lower = math.floor((util - short / int(total)) * 100) / 100
    if lower < 0.5:
        return []
    stated = "the log's" if ex.get("gpu_memory_utilization") else "the default"
    return [_fix(f"Keep at least {_b(short)} more outside vLLM's budget: --gpu-memory-utilization {lower:.2f}",
                 f"{_vllm_serve(ex)} --gpu-memory-utilization {lower:.2f}",
                 f"a {_b(req)} activation failed with {_b(free or 0)} free on the {_b(total)} GPU; {stated} "
                 f"{util:.2f} → {lower:.2f} keeps {_b((util - lower) * int(total))} more outside vLLM's budget "
                 "(the KV pool shrinks by as much)")]


# SGLang: KV budget = free after the weights − (free before the weights) × (1 − mem_fraction_static)
# (mem_cache/kv_cache_configurator.py _profile_available_bytes, see runtimes/sglang.py); a budget at or below zero is
# "Loaded weights leave no GPU memory for the KV cache" / a negative profiled max_total_tokens. The fix keeps this
# share above the smallest fraction that gives the pool any room, and never asks for more than SGLANG_MAX_FRACTION.
SGLANG_FRACTION_STEP = 0.02
SGLANG_MAX_FRACTION = 0.95


def sglang_fraction_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """The smallest --mem-fraction-static that leaves the KV pool any room, from the log's own "Load weight end"
    figures (free after the weights, and what they took), and the pool and the reserve at the value suggested."""
    after, weights = ex.get("sglang_free_after_weights_bytes"), ex.get("sglang_weights_bytes")
    if not (after and weights):
        return []
    before = int(after) + int(weights)
    minimum = 1 - int(after) / before
    figures = f"the weights took {_b(weights)} of the {_b(before)} free before loading, leaving {_b(after)}"
    asked = ex.get("mem_fraction_static")
    if asked is not None:
        budget = int(after) - before * (1 - float(asked))
        figures += f"; at {float(asked):g} the KV pool gets {_b(budget)}" if budget > 0 else (
            f"; at {float(asked):g} the KV pool would get {_b(budget)} (nothing)")
    frac = math.ceil((minimum + SGLANG_FRACTION_STEP) * 100) / 100
    if frac > SGLANG_MAX_FRACTION:
        return [_fix("The weights leave almost nothing on each GPU: spread them over more GPUs or quantize them", "",
                     f"{figures}: the KV pool needs --mem-fraction-static above {minimum:.3f}, which leaves under "
                     f"{1 - SGLANG_MAX_FRACTION:.0%} for activations and CUDA graphs")]
    pool, reserve = int(after) - before * (1 - frac), before * (1 - frac)
    return [_fix(f"Raise --mem-fraction-static to {frac:.2f} (above the {minimum:.3f} the weights need)",
                 f"python -m sglang.launch_server --model-path {_model_ref(ex)} --mem-fraction-static {frac:.2f}",
                 f"{figures}; at {frac:.2f} the KV pool gets {_b(pool)} and {_b(reserve)} stays outside it for "
                 "activations and CUDA graphs")]


# llama.cpp's own fitting keeps 1024 MiB free per device by default (common/fit.cpp, PR #16653: "cannot fulfill
# margin of 1024 MiB"); the compute buffer is allocated after the KV cache and needs that room.
FIT_MARGIN = GiB
CTX_PAD = 256  # llama.cpp pads the KV cache to a multiple of 256 cells (src/llama-context.cpp)
Q8_0_PER_F16 = 34 / 64  # ggml type traits: q8_0 packs 32 values in 34 bytes, f16 in 64
_HOST = ("CPU", "CUDA_Host", "ROCm_Host", "Vulkan_Host", "CPU_Mapped", "CPU_REPACK")


_gguf = ollama_fixes.gguf_name


def _device_figures(ex: dict[str, Any]) -> tuple[str | None, int | None, int]:
    """(device, free before loading, weights on it) for the device whose allocation failed."""
    device = ex.get("device")
    free_by = ex.get("free_by_device") or {}
    free = free_by.get(device) if device in free_by else (ex.get("free_bytes") if len(free_by) <= 1 else None)
    models = ex.get("model_by_device") or {}
    if device in models:
        weights = models[device]
    else:  # one device: the model buffers that are not host buffers
        weights = int(ex.get("model_buffer_bytes") or 0) if not models else sum(
            v for k, v in models.items() if k not in _HOST)
    return device, free, int(weights)


def _ctx_that_fits(budget: float, per_token: float) -> int:
    return int(budget // per_token) // CTX_PAD * CTX_PAD if budget > 0 else 0


def _kv_per_token(ex: dict[str, Any], device: str | None) -> tuple[float, int, int] | None:
    """(KV bytes per token on ``device``, n_ctx, KV bytes asked for): from the allocation that failed, or from a
    successful load's KV buffer on that device."""
    n_ctx = ex.get("n_ctx")
    if not n_ctx:
        return None
    if ex.get("kv_alloc_failed"):
        kv = ex.get("requested_bytes")
    else:
        kv = (ex.get("kv_by_device") or {}).get(device) or ex.get("kv_buffer_bytes")
    return (int(kv) / int(n_ctx), int(n_ctx), int(kv)) if kv else None


def largest_context(ex: dict[str, Any]) -> dict[str, Any] | None:
    """The largest llama.cpp context whose KV cache fits next to the weights on the device the log names, from
    the log's own figures: free memory before loading ("using device CUDA0 (…) - N MiB free"), the model buffer
    placed on that device, and the KV bytes per token (the failed allocation / n_ctx, or a KV buffer / n_ctx),
    keeping llama.cpp's 1 GiB fitting margin for the compute buffer. None when a figure is missing."""
    device, free, weights = _device_figures(ex)
    kv = _kv_per_token(ex, device)
    if kv is None or not free:
        return None
    per_token, n_ctx, kv_bytes = kv
    budget = free - weights - FIT_MARGIN
    return {"ctx": _ctx_that_fits(budget, per_token), "per_token": per_token, "budget": budget, "free": free,
            "weights": weights, "device": device, "n_ctx": n_ctx, "kv_bytes": kv_bytes}


def llamacpp_context_fixes(ex: dict[str, Any], runtime: str | None = None) -> list[dict[str, str]]:
    """A llama.cpp KV-cache allocation failed: the largest context that fits, computed from the log's own
    figures (:func:`largest_context`), with the log's own .gguf file; without a free-memory figure, the
    model's trained context (n_ctx_train) when the request was above it."""
    if not ex.get("kv_alloc_failed"):
        return []
    model, device = _gguf(ex), ex.get("device")
    kv = _kv_per_token(ex, device)
    if kv is None:
        return _context_share_fixes(ex, runtime)
    per_token, n_ctx, kv_bytes = kv
    cost = (f"the KV cache costs {_b(per_token)} per token here ({n_ctx:,} tokens asked for {_b(kv_bytes)}"
            f"{' on ' + device if device else ''})")
    fit = largest_context(ex)
    if fit is None:
        train = ex.get("n_ctx_train")
        if train and int(train) < n_ctx:
            return [_fix(f"Use the model's trained context, {int(train):,} tokens", _context_command(model, int(train),
                         runtime, ex), f"{cost}; the model was trained for {int(train):,} tokens, whose KV cache "
                         f"takes {_b(per_token * int(train))} (the log does not say how much memory was free)")]
        return [_fix("Shrink the context: the KV cache grows with it", "",
                     f"{cost}; the log does not say how much memory was free, so size {_knob(runtime, '-c')} to what you have")]
    where = (f"{_b(fit['free'])} free on {device or 'the device'} − {_b(fit['weights'])} of weights − "
             f"{_b(FIT_MARGIN)} for the compute buffer leaves {_b(max(fit['budget'], 0))}")
    if fit["ctx"] < CTX_PAD:
        return [_fix("The weights leave no room for a KV cache on this device", "",
                     f"{cost}; {where}: offload fewer layers ({_knob(runtime, '-ngl')}) or use a smaller quantization")]
    ctx = fit["ctx"]
    fixes = [_fix(f"Use a context of at most {ctx:,} tokens (the largest that fits)",
                  _context_command(model, ctx, runtime, ex), f"{cost}; {where}: {ctx:,} tokens fit")]
    if str(ex.get("cache_type_k") or "f16") == "f16" and (
            runtime != "ollama" or _ollama_reads(ex, "OLLAMA_KV_CACHE_TYPE", OLLAMA_KV_TYPE_FROM)):
        ctx8 = _ctx_that_fits(fit["budget"], per_token * Q8_0_PER_F16)
        fixes.append(_fix(f"Or quantize the KV cache to q8_0 and keep {ctx8:,} tokens",
                          _context_command(model, ctx8, runtime, ex, q8=True),
                          f"q8_0 stores the cache in {Q8_0_PER_F16:.0%} of the f16 bytes: {ctx8:,} tokens fit in the "
                          f"same {_b(fit['budget'])}"))
    return fixes


def _context_share_fixes(ex: dict[str, Any], runtime: str | None) -> list[dict[str, str]]:
    """The KV cache failed in a log that does not print n_ctx ("llama_context: n_ctx = …"): the share of the context
    that fits, from the failed KV allocation, the free memory and the weights on that device (the same budget as
    :func:`largest_context`); the context in tokens stays the reader's, since the log does not say it."""
    device, free, weights = _device_figures(ex)
    kv = ex.get("requested_bytes") or ex.get("kv_buffer_bytes")
    unknown = "the log does not state n_ctx (\"llama_context: n_ctx = …\")"
    if not kv:
        return []
    if not free:
        return [_fix("Use a smaller context: the KV cache grows with it", _share_command(runtime, None, ex),
                     f"the KV cache asked for {_b(kv)}; {unknown} nor how much memory was free, so the share of "
                     "the context that fits is yours to size")]
    budget = free - weights - FIT_MARGIN
    where = (f"{_b(free)} free on {device or 'the device'} − {_b(weights)} of weights − {_b(FIT_MARGIN)} for the "
             f"compute buffer leaves {_b(max(budget, 0))}")
    share = math.floor(budget / int(kv) * 100) / 100
    if share <= 0:
        return [_fix("The weights leave no room for a KV cache on this device", "",
                     f"the KV cache asked for {_b(kv)}; {where}: offload fewer layers ({_knob(runtime, '-ngl')}) or use a "
                     "smaller quantization")]
    if share >= 1:
        return []  # the figures say it fitted: what else held the memory is not in the log
    fixes = [_fix(f"Use at most {share:.0%} of the context that failed (the log does not state n_ctx)",
                  _share_command(runtime, share, ex),
                  f"the KV cache of {_b(kv)} did not fit; {where} = {share:.0%} of it; the context in tokens is "
                  f"yours to scale, since {unknown}")]
    if str(ex.get("cache_type_k") or "f16") == "f16" and (
            runtime != "ollama" or _ollama_reads(ex, "OLLAMA_KV_CACHE_TYPE", OLLAMA_KV_TYPE_FROM)):
        share8 = min(math.floor(budget / (int(kv) * Q8_0_PER_F16) * 100) / 100, 1.0)
        fixes.append(_fix(f"Or quantize the KV cache to q8_0 and keep {share8:.0%} of the context",
                          _share_command(runtime, share8, ex, q8=True),
                          f"q8_0 stores the cache in {Q8_0_PER_F16:.0%} of the f16 bytes: {share8:.0%} of the "
                          f"context fits in the same {_b(budget)}"))
    return fixes


def _share_command(runtime: str | None, share: float | None, ex: dict[str, Any], q8: bool = False) -> str:
    """A context command whose size is a share of the one that failed (N, with the bound in a comment; ``share``
    None: only that it is smaller)."""
    def bound(knob: str) -> str:
        return f"   # N ≤ {share:.2f} × the {knob} that failed" if share is not None else \
            f"   # N below the {knob} that failed"

    if runtime == "ollama":  # older releases: per model, in a Modelfile
        return ollama_fixes.share_command(bound("num_ctx"), _ollama_reads(ex, "OLLAMA_CONTEXT_LENGTH",
                                                                           OLLAMA_CONTEXT_ENV_FROM), q8)
    q8_flags = f" {_fa_flag(ex)} --cache-type-k q8_0 --cache-type-v q8_0" if q8 else ""
    return f"llama-server -m {_gguf(ex)} -c N{q8_flags}{bound('-c')}"


def _context_command(model: str, ctx: int, runtime: str | None, ex: dict[str, Any], q8: bool = False) -> str:
    if runtime == "ollama":  # Ollama sizes the cache as num_ctx × parallel (server/sched.go)
        num_ctx = max(CTX_PAD, ctx // int(ex.get("n_seq_max") or 1))
        return ollama_fixes.context_command(num_ctx, _ollama_reads(ex, "OLLAMA_CONTEXT_LENGTH",
                                                                   OLLAMA_CONTEXT_ENV_FROM), q8)
    cmd = f"llama-server -m {model} -c {ctx}"
    if ex.get("n_gpu_layers") is not None:
        cmd += f" -ngl {ex['n_gpu_layers']}"
    return cmd + (f" {_fa_flag(ex)} --cache-type-k q8_0 --cache-type-v q8_0" if q8 else "")


def fragmentation_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """The request would have fitted in what PyTorch holds unused: say so with the numbers. When the log sets
    PyTorch's allocator itself (PYTORCH_CUDA_ALLOC_CONF), the fix names that setting: backend:cudaMallocAsync is
    undone (CUDA's stream-ordered pools replace PyTorch's caching allocator, whose expandable segments then do not
    apply: PyTorch docs, "CUDA memory management", backend option), and expandable segments already on are not
    suggested again."""
    conf = str(ex.get("torch_alloc_conf") or "")
    if "backend:cudamallocasync" in conf.lower():
        return [_fix("Go back to PyTorch's own caching allocator",
                     "unset PYTORCH_CUDA_ALLOC_CONF   # or remove backend:cudaMallocAsync where the program sets it",
                     f"the log sets PYTORCH_CUDA_ALLOC_CONF={conf}: allocations come from CUDA's stream-ordered "
                     "pools, and the out-of-memory came from that allocator, not from the memory in use")]
    req, free, cached = ex.get("requested_bytes"), ex.get("free_bytes"), ex.get("reserved_unallocated_bytes")
    if not (req and cached) or "expandable_segments:true" in conf.lower():
        # with expandable segments on, PyTorch has already unmapped every free page of them and retried before it
        # raised, and torch.cuda.empty_cache() is the same release_cached_blocks (CUDACachingAllocator.cpp): the
        # allocator has nothing left to give back, so no allocator fix is computed
        return []
    effect = (f"the {_b(req)} request failed with {_b(free or 0)} free while {_b(cached)} sat reserved but "
              "unused in PyTorch's cache; growable segments let it be reused")
    # the older wording went in April 2023 (pytorch#99699), the month expandable segments were merged (pytorch#100184):
    # both first ship in 2.1 (2.0 was out in March)
    old = ex.get("torch_before_2_1")
    return [_fix("Upgrade PyTorch to 2.1 or later, then let the allocator grow segments" if old else
                 "Let the allocator grow segments instead of splitting fixed ones",
                 "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                 effect + ("; this message's wording is PyTorch's before 2.1, which has no expandable segments"
                           if old else ""))]


def trt_scratch_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """TensorRT's builder needs more activation scratch than the GPU has free. That scratch is sized by the engine's
    largest shapes, which trtllm-build bounds with --max_num_tokens (tokens in one forward pass) and --max_batch_size
    (TensorRT-LLM docs, performance tuning guide, "max_batch_size and max_num_tokens": both bound the activation
    memory of the built engine). The fix scales the limit the log's own command set by available / required."""
    need, have = ex.get("scratch_required_bytes"), ex.get("scratch_available_bytes")
    if not (need and have) or need <= have:
        return []
    ratio = have / need
    effect = (f"the builder needs {_b(need)} of scratch and {_b(have)} is free ({_b(need - have)} short): "
              f"the limits that size it must shrink to at most {ratio:.0%} of what they are")
    tokens, batch = ex.get("trt_max_num_tokens"), ex.get("trt_max_batch_size")
    if tokens:
        smaller = max(256, _round_down(int(tokens * ratio), 256))
        return [_fix("Build with fewer tokens per forward pass", f"trtllm-build ... --max_num_tokens {smaller}",
                     effect + f" (--max_num_tokens {tokens} → {smaller})")]
    if batch and batch > 1:
        smaller = max(1, int(batch * ratio))
        return [_fix("Build for a smaller batch", f"trtllm-build ... --max_batch_size {smaller}",
                     effect + f" (--max_batch_size {batch} → {smaller})")]
    return [_fix("Build for smaller shapes", "trtllm-build ... --max_num_tokens 8192 --max_batch_size 8", effect)]


def requested_vs_free(ex: dict[str, Any], category: str = "cuda_oom_load") -> list[dict[str, str]]:
    req, free, total = ex.get("requested_bytes"), ex.get("free_bytes"), ex.get("total_bytes")
    if not req:
        return []
    if total and int(req) > int(total):
        return [_fix("No amount of freed memory fits this allocation", "",
                     f"one allocation of {_b(req)} is larger than the whole {_b(total)} device: shrink what is "
                     "computed at once (a shorter input, memory-efficient attention, a smaller batch)")]
    short = int(req) - int(free or 0)
    effect = f"the allocation of {_b(req)} needs {_b(short)} more than was free"
    if total:
        effect += f" on a {_b(total)} device"
    return [_fix("Free or save at least the missing memory", device_fixes.processes_command(category, ex), effect)]


# how each runtime caps the input it accepts, for long_input_fixes (flags as each documents them: LightLLM's api_server
# --max_req_input_len, lmdeploy's --session-len, SGLang's --context-length, llama.cpp's -c); a plain transformers or
# PyTorch program truncates at the tokenizer
_INPUT_CAP = {
    "lightllm": "python -m lightllm.server.api_server --model_dir MODEL --max_req_input_len {n}",
    "lmdeploy": "lmdeploy serve api_server MODEL --session-len {n}",
    "sglang": "python -m sglang.launch_server --model-path MODEL --context-length {n}",
}   # Ollama: num_ctx (× parallel is llama-server's -c, llm/llama_server.go), per model in a Modelfile
_TRUNCATE = 'inputs = tokenizer(text, return_tensors="pt", truncation=True, max_length={n})'
LONG_INPUT_ROUND = 16   # tokens: the shorter input is rounded down to this


def long_input_fixes(ex: dict[str, Any], runtime: str | None) -> list[dict[str, str]]:
    """A long input's out-of-memory where the log states the input's length and the block it refused: the input that
    fits. The refused block (activations, logits, attention scores) grows at least in step with the input — attention
    scores without a fused kernel grow with its square — so at input × free / requested tokens it fits in what was
    free: the conservative (linear) figure. Nothing when the log lacks one of the three figures or nothing was free."""
    n, req, free = ex.get("input_tokens"), ex.get("requested_bytes"), ex.get("free_bytes")
    if not (n and req and free) or free >= req:
        return []
    fits = int(n * free / req) // LONG_INPUT_ROUND * LONG_INPUT_ROUND
    if fits < LONG_INPUT_ROUND:
        return []
    command = ollama_fixes.modelfile("num_ctx", fits, f"ctx{fits}") if runtime == "ollama" else \
        _INPUT_CAP.get(runtime or "", _TRUNCATE).format(n=fits)
    square = int(n * (free / req) ** 0.5)
    return [_fix(f"Cut the input to {fits:,} tokens", command,
                 f"the refused block of {_b(req)} grows at least in step with the input: at {int(n):,} × "
                 f"{_b(free)} free / {_b(req)} = {fits:,} tokens it fits in what was free (if it is attention scores, "
                 f"which grow with the square of the input, up to {square:,})")]


def ollama_ram_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """Ollama refused to load: its estimate for the model at these settings is above what it counts as available,
    which is free RAM plus free swap (ollama/ollama llm/server.go since v0.3; ollama/ollama#8734 prints free
    358.4 GiB and free_swap 7.8 GiB, then "available (366.2 GiB)"). The fix is sized by the log's own shortfall."""
    need, have = ex.get("ram_required_bytes"), ex.get("ram_available_bytes")
    if not (need and have) or int(need) < int(have):
        return []
    # Ollama refuses only when the estimate is above what is available; figures that print alike ("5.3 GiB … 5.3
    # GiB") differ by less than the last printed digit, so that digit (0.1 GiB) is what to free
    short = int(need) - int(have) or GiB // 10
    free, swap = ex.get("ram_free_bytes"), ex.get("ram_free_swap_bytes")
    made_of = ""
    if free is not None and swap is not None and abs(int(free) + int(swap) - int(have)) <= 0.01 * int(have):
        made_of = f" ({_b(free)} free RAM + {_b(swap)} free swap, as the log prints)"
    counted = f"Ollama counts {_b(have)} as available{made_of}"
    return [
        _fix(f"Free at least {_b(short)} of RAM, then load again",
             ollama_fixes.UNLOAD_COMMAND,   # the knowledge base's own line, which this one then replaces
             f"the estimate at these settings is {_b(need)} and {counted}: {_b(short)} short (unload, close programs)"),
        _fix(f"Or make the load at least {_b(short)} smaller: a smaller quantization or model",
             ollama_fixes.SMALLER_TAG_COMMAND,
             f"weights and KV cache together must shrink by {_b(short)} ({short / int(need):.0%} of the estimate) "
             f"to fit the {_b(have)}; `runlocal check MODEL --runtime ollama --ram {int(have) >> 30}G` sizes it"),
        *ollama_fixes.ram_gap_fixes(short, int(need), int(have), ex.get("n_ctx")),
    ]


def ollama_offload_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """Ollama printed where it put the layers (llm/memory.go EstimateGPULayers, the "msg=offload" line) and its
    estimate did not fit the GPUs: all layers need ``memory.required.full``, of which ``memory.required.kv`` is the
    KV cache (num_ctx × parallel tokens, linear in num_ctx), against the summed ``memory.available``. A shorter
    num_ctx puts every layer on the GPU only if the KV cache is larger than the shortfall; the num_ctx that does is
    the current one scaled by what the cache may keep. The graph estimate also shrinks with num_ctx, so the figure is
    on the safe side. ollama/ollama#9181 (a maintainer's reading of this very line: "reduce num_ctx")."""
    full, kv, avail = (ex.get(k) for k in ("ollama_required_full_bytes", "ollama_required_kv_bytes",
                                           "ollama_gpu_available_bytes"))
    layers, placed = ex.get("ollama_layers_model"), ex.get("ollama_layers_offload")
    if not (full and kv and avail) or int(full) <= int(avail):
        return []
    full, kv, avail = int(full), int(kv), int(avail)
    short = full - avail
    gpus = int(ex.get("ollama_gpu_count") or 1)
    on = f"the {gpus} GPUs" if gpus > 1 else "the GPU"
    now = f"; {placed} of {layers} layers are on {on} now" if layers and placed is not None else ""
    all_layers = f"all {layers} layers" if layers else "every layer"
    have = "have" if gpus > 1 else "has"
    estimate = (f"Ollama's estimate for {all_layers} on {on} is {_b(full)}, of which the KV cache is {_b(kv)}, "
                f"and {on} {have} {_b(avail)} available")
    if kv <= short:
        return [_fix(f"A shorter num_ctx alone cannot put {all_layers} on {on}",
                     "ollama pull MODEL:SMALLER_TAG   # a smaller quantization, or accept the split",
                     f"{estimate}: without any KV cache the rest, {_b(full - kv)}, is still {_b(short - kv)} too much"
                     f"{now}; a shorter num_ctx still moves more layers onto {on}")]
    keep = (kv - short) / kv
    n_ctx = ex.get("n_ctx")
    if not n_ctx:
        return [_fix(f"Cut num_ctx to at most {keep:.0%} of its current value to put {all_layers} on {on}",
                     "ollama show MODEL --parameters   # the num_ctx in use, then set a smaller one",
                     f"{estimate}: the KV cache must shrink by {_b(short)}{now}")]
    ctx = int(int(n_ctx) * keep) // CTX_PAD * CTX_PAD
    return [_fix(f"Use num_ctx {max(ctx // int(ex.get('n_seq_max') or 1), CTX_PAD):,} to put {all_layers} on {on}",
                 _context_command("MODEL", ctx, "ollama", ex),
                 f"{estimate}: the KV cache of {int(n_ctx):,} tokens must shrink by {_b(short)}, to {keep:.0%}{now}")]


def llamacpp_slots(ex: dict[str, Any]) -> tuple[int | None, int | None, bool]:
    """(ctx, parallel, kv_unified) in runlocal's terms (--ctx is one sequence's context; --parallel N asks for N
    of them) from a llama.cpp log's n_ctx, n_ctx_seq, n_seq_max and kv_unified (src/llama-context.cpp). A log
    without n_seq_max is one sequence; llama-server's -np auto (4 slots, one unified stream of n_ctx cells that
    any one request may fill) is runlocal's default (parallel None)."""
    from ..runtimes.llamacpp import AUTO_SLOTS

    n_ctx, n_seq = ex.get("n_ctx"), int(ex.get("n_seq_max") or 1)
    unified = bool(ex.get("kv_unified"))
    if n_seq == 1 or not n_ctx:
        return n_ctx, n_seq, unified
    if unified:
        return (n_ctx, None, False) if n_seq == AUTO_SLOTS else (n_ctx // n_seq, n_seq, True)
    return ex.get("n_ctx_per_seq") or n_ctx // n_seq, n_seq, False


def replan_fixes(ex: dict[str, Any], runtime: str | None, policy=None) -> list[dict[str, str]]:
    """Re-plan when the log names a model and a GPU runlocal can resolve offline, reading the model under
    ``policy`` (a server's: the log is an anonymous caller's text)."""
    model, gpu_name, total = ex.get("model"), ex.get("gpu_name"), ex.get("total_bytes")
    if not model or not (gpu_name or total) or not resolvable_offline(str(model), policy):
        return []
    from ..check import CheckRequest, check
    from ..errors import RunlocalError
    from ..runtimes.registry import find_engine

    rt = runtime or ("vllm" if ex.get("max_model_len") or ex.get("kv_cache_tokens") else "llama.cpp")
    spec = runtime_spec(rt, ex)  # the log's own release: its allocation rules and defaults
    ctx, parallel, unified = llamacpp_slots(ex)
    if ex.get("max_model_len"):
        ctx = ex["max_model_len"]
    known = find_engine(rt.split("==")[0])
    stated: dict[str, Any] = {"gpu_memory_utilization": ex.get("gpu_memory_utilization"), "kv_unified": unified,
                              "mem_fraction_static": ex.get("mem_fraction_static"), "tp": ex.get("tensor_parallel_size")}
    ranks = int(ex.get("tensor_parallel_size") or 1)   # one total per rank: the log's TP × the card it states
    req = CheckRequest(model=str(model), runtime=spec, gpu=gpu_name, vram=f"{ranks}x{int(total)}" if total else None,
                       ctx=int(ctx) if ctx else None,
                       cache_type_k=ex.get("cache_type_k"), cache_type_v=ex.get("cache_type_v"), parallel=parallel,
                       # only the settings of the log's own engine (another engine's flag is refused)
                       **{k: v for k, v in stated.items() if known and k in known.own_options})
    try:
        plan, _ = check(req, policy)
    except (RunlocalError, ValueError):
        return []
    except Exception:  # the re-plan is an extra: a planner fault must not hide the diagnosis
        if os.environ.get("RUNLOCAL_DEBUG"):
            raise
        return []
    return [f.to_dict() for f in plan.fixes]


_MAX_MODEL_LEN = re.compile(r"--max[-_]model[-_]len[= ](\d+)")


def _agree_on_context(measured: list[dict[str, str]], planned: list[dict[str, str]]) -> None:
    """When the planner keeps more headroom than the pool vLLM measured, lower the log's --max-model-len fix
    to the planner's, so that `runlocal check` agrees with what `diagnose` proposes (in place)."""
    plan_lens = [int(m.group(1)) for f in planned
                 if _flags(f["command"]) == {"--max-model-len"}
                 for m in [_MAX_MODEL_LEN.search(f["command"])] if m]
    if not plan_lens:
        return
    planned_len = min(plan_lens)
    for i, f in enumerate(measured):
        m = _MAX_MODEL_LEN.search(f["command"])
        if not m or _flags(f["command"]) != {"--max-model-len"}:
            continue
        log_len = int(m.group(1))
        if planned_len < log_len:
            measured[i] = _fix(f"Serve at most {planned_len:,} tokens per request",
                               f["command"][:m.start(1)] + str(planned_len) + f["command"][m.end(1):],
                               f"{f['effect']}; runlocal's plan for this GPU keeps headroom and allows "
                               f"{planned_len:,} (`runlocal check` agrees)")


def compute_fixes(category: str, extracted: dict[str, Any], runtime: str | None = None,
                  policy=None) -> list[dict[str, str]]:
    """Fixes with numbers: first those read off the log's own measurements (vLLM's KV pool), then the
    planner's, minus any planner fix that only turns a knob the log's numbers already set (a measured
    KV pool beats an estimated one). ``policy``: what the re-plan may read (model/policy.py)."""
    fixes: list[dict[str, str]] = []
    if category == "vllm_no_kv_blocks":
        fixes += vllm_kv_fixes(extracted)
    if category == "vllm_gpu_util":
        fixes += vllm_utilization_fixes(extracted) + sglang_balance_fixes(extracted)
    cap = device_fixes.vulkan_cap_fixes(extracted, runtime == "ollama")  # the cap line: memory or not_memory
    if cap:  # one buffer over a driver's per-allocation cap: free memory and the planner's budget do not apply
        return cap
    if category == "llamacpp_alloc_fail":   # an AMD GPU's GTT share first, where that pool ran out (vulkan_backend)
        fixes += share_fixes(extracted) + llamacpp_context_fixes(extracted, runtime)
        fixes += layer_fixes.compute_buffer_layers(extracted, runtime == "ollama", *_device_figures(extracted))
        fixes += layer_fixes.weights_buffer_layers(extracted, runtime == "ollama", *_device_figures(extracted)[:2])
        fixes += ollama_room.room_fixes(extracted, _ollama_reads(extracted, "OLLAMA_CONTEXT_LENGTH", OLLAMA_CONTEXT_ENV_FROM))
    if category == "ollama_system_memory":
        fixes += ollama_ram_fixes(extracted)
    if category == "rocm_oom":   # on a GPU the log names as an APU, the raise of its share of RAM first
        fixes += share_fixes(extracted, category)
    if category == "sglang_kv_overflow":
        fixes += sglang_fraction_fixes(extracted)
    # Ollama's own placement estimate, whatever failed (or when nothing did and layers ran on the CPU)
    if category in kb.MEMORY_CATEGORIES:   # and SGLang's pool allocated, then an allocation failed (not "unknown")
        fixes += ollama_offload_fixes(extracted) + sglang_serving.lower_fraction_fixes(extracted)
    if category == "vllm_engine_dead" or (
            category == "cuda_oom_long_context" and (runtime or extracted.get("runtime")) == "vllm"):
        fixes += vllm_headroom_fixes(extracted)
    if category in ("cuda_oom_long_context", "cuda_oom_load", "cuda_oom_phase_unstated", "llamacpp_alloc_fail",
                    "rocm_oom", "vllm_no_kv_blocks",
                    "ollama_system_memory", "metal_oom"):
        measured = list(fixes)
        planned = [f for f in replan_fixes(extracted, runtime, policy)
                   if not sglang_serving.raises_fraction(f, extracted)]
        _agree_on_context(measured, planned)
        fixes = measured + [f for f in planned if not _superseded(f["command"], measured)]
    if category == "fragmentation":
        fixes += fragmentation_fixes(extracted)
    elif category in ("cuda_oom_load", "cuda_oom_long_context", "cuda_oom_phase_unstated", "rocm_oom") and not fixes:
        if category == "cuda_oom_long_context":
            fixes += long_input_fixes(extracted, runtime or extracted.get("runtime"))
        fixes += trt_scratch_fixes(extracted) or requested_vs_free(extracted, category)
    seen, out = set(), []
    for f in fixes:
        if f["command"] not in seen:
            seen.add(f["command"])
            out.append(f)
    return out


def with_computed_fixes(diagnosis, runtime: str | None = None, policy=None) -> dict[str, Any]:
    """The diagnosis as JSON, its computed fixes (with numbers) first, then the KB's own. ``policy``: what a model
    the log names may make runlocal read (model/policy.py; None: the CLI's, everything)."""
    doc = diagnosis.to_dict()
    extracted = doc.get("extracted", {})
    guessed, runtime = runtime_note.guessed_runtime(extracted, runtime)
    release = log_release(extracted, runtime)
    if release is not None:  # say whose rules the fixes follow
        extracted["runtime_release"] = f"{runtime} {release.text} (as the log prints it)"
    computed = compute_fixes(doc["category"], extracted, runtime, policy)
    model = str(extracted.get("model") or "")
    kb_fixes = []
    for f in doc["fixes"]:
        if _superseded(f["command"], computed):
            continue  # the same knob, already given with the log's numbers
        if model and not any(c.isspace() for c in model):
            f = dict(f, command=_MODEL_WORD.sub(lambda _: model, f["command"]))
            if model.lower().endswith(".gguf"):
                f = dict(f, command=_GGUF_WORD.sub(lambda _: model, f["command"]))
        kb_fixes.append(f)
    if extracted.get("vk_allocation_cap_exceeded") and computed:  # one buffer over a driver's cap, not a full card
        cap_flags = frozenset().union(*(_flags(f["command"]) for f in computed))
        kb_fixes = [f for f in kb_fixes
                    if not device_fixes.reads_cap_as_capacity(f["command"], _flags(f["command"]), cap_flags, extracted)]
    if any(f["title"].startswith(ollama_fixes.KV_ONLY_IF) for f in computed):  # said when they could close it
        kb_fixes = [f for f in kb_fixes if not ollama_fixes.KV_KNOBS.search(f["command"])]
    if doc["category"] == "vllm_gpu_util":  # the knowledge base's generic share may not fit what this log had free
        kb_fixes = [f for f in kb_fixes if not _asks_more_than_free(f["command"], extracted)]
    kb_fixes = [j for j in (vllm_budget.judge_share(f, extracted) for f in kb_fixes) if j]  # vs a negative pool
    conf = str(extracted.get("torch_alloc_conf") or "").lower()
    if conf:  # a PyTorch allocator setting the log already made is no fix
        kb_fixes = [f for f in kb_fixes if not _alloc_conf_already_set(f["command"], conf)]
    if guessed:  # say whose each runtime's command is, and that the runtime is not named
        first = runtime_note.mark_guessed(kb_fixes, diagnosis.entry, runtime)
        if first or runtime:  # a detected runtime that is a guess is said even when every fix is for any runtime
            doc["runtime_note"] = runtime_note.note(runtime, first)
    in_release = (_in_release_syntax(f, extracted, runtime)   # nvidia-smi only where the GPU is NVIDIA's
                  for f in vendor_tools(computed + kb_fixes, extracted))
    doc["fixes"] = [ollama_fixes.service_caveat(f) for f in in_release if f is not None]
    return on_unified_device(doc)    # a unified NVIDIA device's total: the OS holds the rest


_VLLM_SERVE = re.compile(r"\bvllm serve (\S+)")
_ALLOC_CONF_SET = re.compile(r"PYTORCH_CUDA_ALLOC_CONF=([\w:.]+)")


def _alloc_conf_already_set(command: str, conf: str) -> bool:
    m = _ALLOC_CONF_SET.search(command)
    return bool(m and m.group(1).lower() in conf)
_UTILIZATION = re.compile(r"--gpu[-_]memory[-_]utilization[= ]([\d.]+)")


def _asks_more_than_free(command: str, ex: dict[str, Any]) -> bool:
    m = _UTILIZATION.search(command)
    free, total = ex.get("free_bytes"), ex.get("total_bytes")
    return bool(m and free and total and float(m.group(1)) * total > free)


def _in_release_syntax(fix: dict[str, str], ex: dict[str, Any], runtime: str | None) -> dict[str, str] | None:
    """The knowledge base writes commands for the current release; say them as the logged release takes them, and
    drop those it cannot run (None)."""
    release = log_release(ex, runtime) if runtime == "vllm" else None
    if release is None:
        return fix
    if "--kv-cache-dtype" in fix["command"] and not release.at_least(*VLLM_FP8_KV_FROM):
        return None
    if "vllm serve" in fix["command"] and not release.at_least(*VLLM_SERVE_FROM):
        command = _VLLM_SERVE.sub(r"python -m vllm.entrypoints.openai.api_server --model \1", fix["command"])
        return dict(fix, command=command)
    return fix


_MODEL_WORD = re.compile(r"(?<![\w./-])MODEL(?![\w.-])")
_GGUF_WORD = re.compile(r"(?<![\w./-])MODEL\.gguf(?![\w.-])")
