"""SGLang ran out of memory after its KV pool was allocated: lower --mem-fraction-static, by the log's own figures.

SGLang sizes its static pool (weights + KV cache) as mem_fraction_static of the memory free before the weights
(mem_cache/kv_cache_configurator.py _profile_available_bytes; runtimes/sglang.py); activations and CUDA graphs live in
what is left. An out-of-memory once "KV Cache is allocated" has been logged is that remainder running short, and
SGLang's own advice for it is to *decrease* the fraction ("You can also decrease --mem-fraction-static to a smaller
value … helps prevent OOM errors during both prefill and decoding", docs.sglang.io references/faq, "CUDA Out of
Memory"). Raising it, the fix for a pool that is too small at start-up, would take more of that room.

Pure computation over the extracted figures; diagnose/fixes.py calls it.
"""

from __future__ import annotations

import math
import re
from typing import Any

_FRACTION = re.compile(r"--mem[-_]fraction[-_]static[= ]([\d.]+)")


def _b(n: float) -> str:
    from ..units import format_bytes

    return format_bytes(int(n))


def serving_oom(ex: dict[str, Any]) -> bool:
    """Whether the log shows SGLang's pool allocated and then a failed allocation (requested bytes)."""
    return bool(ex.get("sglang_kv_pool_tokens") and ex.get("requested_bytes"))


def _before_weights(ex: dict[str, Any]) -> tuple[int, str] | None:
    """The memory the fraction is taken of — free before the weights ("Load weight end … avail mem=…, mem usage=…":
    the two added) — else the GPU's total, which is at most that much more (said in the fix)."""
    after, weights = ex.get("sglang_free_after_weights_bytes"), ex.get("sglang_weights_bytes")
    if after and weights:
        return int(after) + int(weights), "free before the weights"
    total = ex.get("total_bytes")
    return (int(total), "the GPU's total (the log does not state what was free before the weights)") if total else None


def lower_fraction_fixes(ex: dict[str, Any]) -> list[dict[str, str]]:
    """The fraction, below the log's, that frees at least the failed allocation outside the pool (what was free when
    it failed stays as the margin), and what the pool keeps at that value."""
    base = _before_weights(ex)
    if not serving_oom(ex) or base is None or not ex.get("mem_fraction_static"):
        return []   # SGLang's default depends on the card (runtimes/sglang.py): only the log's own value is lowered
    before, of_what = base
    req, free = int(ex["requested_bytes"]), int(ex.get("free_bytes") or 0)
    fraction = float(ex["mem_fraction_static"])
    lower = math.floor((fraction - req / before) * 100) / 100
    freed = (fraction - lower) * before
    effect = (f"the pool was allocated, then a {_b(req)} allocation failed with {_b(free)} free: the log's {fraction:g} "
              f"→ {lower:.2f} of {_b(before)} ({of_what}) keeps {_b(freed)} more outside the pool, at least the "
              f"failed {_b(req)}, with the {_b(free)} that was free as the margin")
    tokens, pool = ex.get("sglang_kv_pool_tokens"), ex.get("sglang_kv_pool_bytes")
    if tokens and pool:
        kept = int(pool) - freed
        if kept <= 0:
            return [_fix("Lowering --mem-fraction-static cannot free enough: the KV pool is smaller than the room needed",
                         "", f"{effect}; the pool holds only {_b(pool)}: spread the model over more GPUs, serve "
                         "fewer requests at once (--max-running-requests) or chunk prefill (--chunked-prefill-size)")]
        effect += (f"; the KV pool shrinks from {int(tokens):,} tokens ({_b(pool)}) to about "
                   f"{int(int(tokens) * kept / int(pool)):,}")
    return [_fix(f"Lower --mem-fraction-static to {lower:.2f}: activations ran out beside the KV pool",
                 f"python -m sglang.launch_server --model-path {ex.get('model') or 'MODEL'} "
                 f"--mem-fraction-static {lower:.2f}", effect)]


def raises_fraction(fix: dict[str, str], ex: dict[str, Any]) -> bool:
    """A fix that sets --mem-fraction-static above the log's, on a log that ran out after the pool was allocated."""
    m = _FRACTION.search(fix.get("command") or "")
    stated = ex.get("mem_fraction_static")
    return bool(m and stated and serving_oom(ex) and float(m.group(1)) > float(stated))


def _fix(title: str, command: str, effect: str) -> dict[str, str]:
    return {"title": title, "command": command, "effect": effect}
