"""Concrete fixes computed from the figures a log contains, by the same planner `check` uses.

Two levels: from the log's own numbers alone (KV tokens, max_model_len, bytes requested/free),
and — when the log names a model runlocal can resolve offline and a GPU it knows — by re-planning.
"""

from __future__ import annotations

from typing import Any

GiB = 1 << 30


def _fix(title: str, command: str, effect: str) -> dict[str, str]:
    return {"title": title, "command": command, "effect": effect}


def _round_down(n: int, to: int = 256) -> int:
    return max(to, n // to * to)


def _model_ref(ex: dict[str, Any]) -> str:
    return str(ex.get("model") or "MODEL")


def vllm_kv_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """max_model_len above the KV pool: the pool's size is the largest context that starts."""
    tokens, mml = ex.get("kv_cache_tokens"), ex.get("max_model_len")
    fixes = []
    if tokens:
        fit = _round_down(int(tokens), 256)
        fixes.append(_fix(f"Serve at most {fit:,} tokens per request",
                          f"vllm serve {_model_ref(ex)} --max-model-len {fit}",
                          f"max_model_len {mml:,} → {fit:,} fits the {int(tokens):,}-token KV pool" if mml else
                          f"fits the {int(tokens):,}-token KV pool"))
        kv_dtype = str(ex.get("kv_cache_dtype") or "auto")
        if not kv_dtype.startswith("fp8"):
            doubled = _round_down(2 * int(tokens), 256)
            fixes.append(_fix("Store the KV cache in fp8 (half the bytes per token)",
                              f"vllm serve {_model_ref(ex)} --kv-cache-dtype fp8 --max-model-len {min(doubled, mml or doubled)}",
                              f"KV pool ≈ {2 * int(tokens):,} tokens; --max-model-len up to {doubled:,}"))
    util = ex.get("gpu_memory_utilization")
    if util and float(util) < 0.95:
        fixes.append(_fix("Give vLLM a larger share of the GPU",
                          f"vllm serve {_model_ref(ex)} --gpu-memory-utilization 0.95",
                          f"budget {float(util):.2f} → 0.95 of the GPU; the extra goes to the KV pool"))
    return fixes


def requested_vs_free(ex: dict[str, Any]) -> list[dict[str, str]]:
    req, free, total = ex.get("requested_bytes"), ex.get("free_bytes"), ex.get("total_bytes")
    if not req:
        return []
    short = int(req) - int(free or 0)
    effect = f"the allocation of {req / GiB:.2f} GiB needs {short / GiB:.2f} GiB more than was free"
    if total:
        effect += f" on a {total / GiB:.1f} GiB device"
    return [_fix("Free or save at least the missing memory", "nvidia-smi   # look for other processes first", effect)]


def replan_fixes(ex: dict[str, Any], runtime: str | None) -> list[dict[str, str]]:
    """Re-plan when the log names a model and a GPU runlocal can resolve offline."""
    model, gpu_name, total = ex.get("model"), ex.get("gpu_name"), ex.get("total_bytes")
    if not model or not (gpu_name or total):
        return []
    from ..check import CheckRequest, check
    from ..errors import RunlocalError

    rt = runtime or ("vllm" if ex.get("max_model_len") or ex.get("kv_cache_tokens") else "llama.cpp")
    ctx = ex.get("max_model_len") or ex.get("n_ctx")
    req = CheckRequest(model=str(model), runtime=rt, gpu=None if total else gpu_name,
                       vram=str(int(total)) if total else None, ctx=int(ctx) if ctx else None,
                       cache_type_k=ex.get("cache_type_k"), cache_type_v=ex.get("cache_type_v"),
                       gpu_memory_utilization=ex.get("gpu_memory_utilization"), parallel=int(ex.get("n_seq_max") or 1))
    try:
        plan, _ = check(req)
    except (RunlocalError, ValueError):
        return []
    return [f.to_dict() for f in plan.fixes]


def compute_fixes(category: str, extracted: dict[str, Any], runtime: str | None = None) -> list[dict[str, str]]:
    fixes: list[dict[str, str]] = []
    if category in ("vllm_no_kv_blocks", "vllm_gpu_util"):
        fixes += vllm_kv_fixes(extracted)
    if category in ("cuda_oom_long_context", "cuda_oom_load", "llamacpp_alloc_fail", "rocm_oom", "vllm_no_kv_blocks",
                    "ollama_system_memory", "metal_oom"):
        fixes += replan_fixes(extracted, runtime)
    if category in ("cuda_oom_load", "cuda_oom_long_context", "rocm_oom", "fragmentation") and not fixes:
        fixes += requested_vs_free(extracted)
    seen, out = set(), []
    for f in fixes:
        if f["command"] not in seen:
            seen.add(f["command"])
            out.append(f)
    return out


def with_computed_fixes(diagnosis, runtime: str | None = None) -> dict[str, Any]:
    """The diagnosis as JSON, its computed fixes (with numbers) first, then the KB's own."""
    doc = diagnosis.to_dict()
    computed = compute_fixes(doc["category"], doc.get("extracted", {}), runtime)
    commands = {c["command"] for c in computed}
    doc["fixes"] = computed + [f for f in doc["fixes"] if f["command"] not in commands]
    return doc
