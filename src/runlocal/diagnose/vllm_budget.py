"""vLLM's profiled budget left the KV pool negative: the fixes computed from the log's own signed figure.

vLLM sizes its pool as gpu_memory_utilization × total − weights − non-torch memory − the profiling pass's activation
peak (V0 vllm/worker/worker.py determine_num_available_blocks, logged as "… the rest of the memory reserved for KV Cache
is -1.05GiB"; V1 vllm/v1/worker/gpu_worker.py, "Available KV cache memory: -0.87 GiB") and refuses to start when the
pool cannot hold one request of max_model_len ("No available memory for the cache blocks"; V1's "… KV cache is needed,
which is larger than the available KV cache memory"). So a larger share helps only when it covers the shortfall and
one max_model_len of KV, and the activation peak is the other term the user sets (--max-num-batched-tokens).

Computation over the extracted figures, plus the config of a model the log names when it resolves offline (the KV
bytes of one request); diagnose/fixes.py calls it.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

# The largest share offered: pre-v0.21 vLLM captures its CUDA graphs after the KV pool, outside the budget (0.42–0.67
# GiB logged for 1–8B models, runtimes/vllm.py CUDA_GRAPH_BYTES), and the driver and other processes need the rest:
# 2 % of a 24 GiB card is 0.47 GiB. vLLM's own advice when graph capture runs out is to lower the share ("If
# out-of-memory error occurs during cudagraph capture, consider decreasing `gpu_memory_utilization`", V0 model_runner.py
# capture_model).
MAX_UTILIZATION = 0.98
# vLLM's profiling pass runs one batch of max_num_batched_tokens tokens (V0 model_runner.py profile_run, V1
# gpu_model_runner.py profile_run → _dummy_run(max_num_tokens)); its activations grow with those tokens, so the peak is
# scaled in step with them (the sampler's logits for max_num_seqs rows do not shrink: the estimate is the optimistic
# side for that part, which is why the fix says "about").
_UTILIZATION = re.compile(r"--gpu[-_]memory[-_]utilization[= ]([\d.]+)")


def _b(n: float) -> str:
    from ..units import format_bytes

    return format_bytes(int(n))


def _fix(title: str, command: str, effect: str) -> dict[str, str]:
    return {"title": title, "command": command, "effect": effect}


def shortfall(ex: dict[str, Any]) -> int | None:
    """How far below zero the log's KV pool is, in bytes (None: the log states no negative pool)."""
    kv = ex.get("kv_cache_bytes")
    return -int(kv) if kv is not None and int(kv) <= 0 else None


def _share(ex: dict[str, Any]) -> tuple[int, float] | None:
    """(total GPU bytes, the logged gpu_memory_utilization) when the log states both."""
    total, util = ex.get("total_bytes"), ex.get("gpu_memory_utilization")
    return (int(total), float(util)) if total and util else None


def _one_request(ex: dict[str, Any]) -> int | None:
    """KV bytes of one max_model_len request: as the log states them (V1: "(N GiB KV cache is needed, …"), else
    runlocal's estimate from the config of the model the log names (:func:`estimated_request`)."""
    needed = ex.get("kv_needed_bytes")
    if needed and ex.get("max_model_len"):
        return int(needed)
    estimate = estimated_request(ex)
    return estimate[0] if estimate else None


@functools.lru_cache(maxsize=8)
def _estimate(model: str, mml: int, cache: str) -> int | None:
    from ..errors import RunlocalError
    from ..kv import kv_bytes
    from ..model.policy import ReadPolicy
    from ..model.resolve import resolve_model
    from .offline_model import resolvable_offline

    # a log is text a caller pasted (the API and site diagnose it): the model it names is resolved from the catalog or
    # the Hugging Face cache only, never as a local path or URL, whoever runs it (lru-cached without the caller's policy)
    policy = ReadPolicy.server()
    if not resolvable_offline(model, policy):
        return None
    try:
        return kv_bytes(resolve_model(model, policy), mml, cache, cache)
    except (RunlocalError, ValueError, KeyError):
        return None


def estimated_request(ex: dict[str, Any]) -> tuple[int, str] | None:
    """(KV bytes of one max_model_len request, how they were found) from the config of the model the log names, when it
    resolves offline (resolvable_offline under the server policy: a catalog name, a cached Hub config) and runs on one
    GPU: KV bytes per token (kv.py, every attention layer, sliding ones capped at their window) × max_model_len, in
    the log's --kv-cache-dtype (auto: 16-bit)."""
    model, mml = ex.get("model"), ex.get("max_model_len")
    if not (model and mml) or int(ex.get("tensor_parallel_size") or 1) > 1:
        return None
    dtype = str(ex.get("kv_cache_dtype") or "auto")
    cache = dtype if dtype.startswith("fp8") else "f16"
    bytes_ = _estimate(str(model), int(mml), cache)
    return (bytes_, f"runlocal's estimate from {model}'s config ({cache} KV)") if bytes_ else None


def utilization_fix(ex: dict[str, Any], serve: str) -> dict[str, str] | None:
    """The share at which the pool holds one max_model_len (or, without the KV bytes per token, the share at which it
    is only empty, as the bound it must exceed); a fix with no command when that share is above MAX_UTILIZATION."""
    short, share = shortfall(ex), _share(ex)
    if short is None or share is None:
        return None
    total, util = share
    empty = util + short / total                       # the pool reaches zero here
    request = _one_request(ex)
    need = empty + (request or 0) / total
    figures = (f"the pool is {_b(short)} short at {util:.2f} × {_b(total)}: {util:.2f} + {_b(short)} / {_b(total)} = "
               f"{empty:.3f} of the GPU only empties it")
    if request:
        estimate = None if ex.get("kv_needed_bytes") else estimated_request(ex)
        how = f", {estimate[1]}" if estimate else ""
        figures += (f"; one {int(ex['max_model_len']):,}-token request needs {_b(request)} more{how}: {need:.3f}")
    if need > MAX_UTILIZATION:
        return _fix(f"A larger --gpu-memory-utilization cannot make room: it would take {need:.3f} of the GPU", "",
                    f"{figures}, above {MAX_UTILIZATION}: the rest of the card must hold the CUDA graphs vLLM "
                    "captures after the pool, the driver and other processes; shrink the activation peak or the "
                    "weights instead")
    if request:
        pick = math.ceil(need * 100) / 100
        return _fix(f"Give vLLM {pick:.2f} of the GPU: the pool then holds one {int(ex['max_model_len']):,}-token "
                    "request", f"{serve} --gpu-memory-utilization {pick:.2f}", figures)
    bound = math.floor(empty * 100 + 1) / 100        # the first hundredth above the empty pool
    return _fix(f"Give vLLM more than {empty:.3f} of the GPU (up to {MAX_UTILIZATION})",
                f"{serve} --gpu-memory-utilization U   # {bound:.2f} ≤ U ≤ {MAX_UTILIZATION}: U − {empty:.3f} of "
                f"{_b(total)} is the KV pool",
                f"{figures}; each 0.01 above it adds {_b(total / 100)} of KV cache, {_b((MAX_UTILIZATION - empty) * total)}"
                f" at {MAX_UTILIZATION}, and the pool must hold one max_model_len (the log does not state the KV bytes "
                "per token): if that is more, this alone cannot start vLLM")


def activation_fix(ex: dict[str, Any], serve: str) -> dict[str, str] | None:
    """Fewer tokens per forward pass: the profiling pass's activation peak shrinks in step, by the shortfall (and one
    max_model_len of KV when the log gives it); None without the activation figure or when that cannot suffice."""
    short, peak = shortfall(ex), ex.get("vllm_activation_peak_bytes")
    if short is None or not peak:
        return None
    peak = int(peak)
    cut = short + (_one_request(ex) or 0)
    keep = (peak - cut) / peak
    if keep <= 0 or cut <= 0:
        return None   # cannot suffice, or a pool of exactly zero with no request size to aim for
    pct = math.floor(keep * 100) / 100
    current = ex.get("max_num_batched_tokens")
    if current:
        n = max(int(int(current) * pct) // 256 * 256, 256)
        value, said = str(n), f" (--max-num-batched-tokens {int(current):,} → {n:,})"
    else:
        value, said = "N", ""
    command = f"{serve} --enable-chunked-prefill --max-num-batched-tokens {value}"
    if not current:
        command += f"   # N ≤ {pct:.2f} × the tokens per pass now (--max-num-batched-tokens)"
    return _fix(f"Cut the tokens per forward pass to at most {pct:.0%}: the activation peak shrinks with them",
                command,
                f"the profiling pass's activation peak of {_b(peak)} must shrink by {_b(cut)} for the pool to reach "
                f"{'one request' if _one_request(ex) else 'zero'}: about {pct:.0%} of the tokens per pass{said}; "
                f"each further 10 % fewer frees about {_b(peak / 10)} for the pool; chunked prefill lets a prompt "
                "longer than that run in pieces")


def negative_pool_fixes(ex: dict[str, Any], serve: str) -> list[dict[str, str]]:
    """Both fixes; the share first only when the log shows it holds one request (the KV bytes of max_model_len are
    stated): otherwise the activation peak first, since a larger share alone may not start vLLM."""
    share, act = utilization_fix(ex, serve), activation_fix(ex, serve)
    if share is not None and share["command"] and _one_request(ex):
        return [f for f in (share, act) if f]
    return [f for f in (act, share) if f]


def default_share(ex: dict[str, Any]) -> float:
    """The --gpu-memory-utilization a log that does not state one ran with: its release's default where the log names
    the release (0.92 from v0.20.0, 0.9 before: runtimes/versions.py vllm_default_utilization), else 0.9 as before."""
    from ..errors import InputError
    from ..runtimes.versions import VLLM_UTILIZATION_DEFAULTS, parse_version, vllm_default_utilization

    try:
        return vllm_default_utilization(parse_version("vllm", str(ex["vllm_version"]).split("+")[0]))  # no +g<sha>
    except (KeyError, InputError):
        return VLLM_UTILIZATION_DEFAULTS[0][1]


def judge_share(fix: dict[str, str], ex: dict[str, Any]) -> dict[str, str] | None:
    """A fix that sets --gpu-memory-utilization, against the log's negative pool: None when that share still leaves
    the pool at or below zero; without the GPU's size in the log, the fix with the size of card it would start on
    (from the logged share, else vLLM's default for the log, default_share)."""
    m, short = _UTILIZATION.search(fix.get("command") or ""), shortfall(ex)
    if not m or short is None:
        return fix
    asked, total = float(m.group(1)), ex.get("total_bytes")
    util = float(ex.get("gpu_memory_utilization") or default_share(ex))
    if total:
        return fix if (asked - util) * int(total) > short else None
    if asked <= util:
        return None
    said = "the log's" if ex.get("gpu_memory_utilization") else "the default"
    card = short / (asked - util)
    effect = (f"{said} {util:.2f} → {asked:.2f} adds {asked - util:.2f} of the GPU to the pool, which is {_b(short)} "
              f"short: that reaches zero only on a card above {_b(card)} (the log does not state the GPU's size), and "
              "the pool must also hold one max_model_len")
    return dict(fix, effect=f"{fix['effect']}; {effect}" if fix.get("effect") else effect)
