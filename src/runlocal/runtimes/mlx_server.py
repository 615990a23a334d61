"""mlx_lm.server's prompt cache: the KV caches of earlier requests it keeps, and what they add up to.

Read in ml-explore/mlx-lm at each release tag (mlx_lm/server.py, mlx_lm/models/cache.py):
- up to v0.28.3: ``PromptCache`` holds the cache of the last prompt only (one sequence).
- v0.28.4 – v0.30.7: ``LRUPromptCache(max_size=10)`` (PR #625, "Add a prompt cache that can hold multiple prompts",
  2025-12-02), built with its default and no flag to change it. A hit on an exact or shorter prefix is taken out of
  the cache while the request runs (``_extract``); a longer one is deep-copied and trimmed, the original kept.
- v0.31.0 on: ``--prompt-cache-size`` (default 10, "Maximum number of distinct KV caches to hold in the prompt
  cache") and ``--prompt-cache-bytes`` (no default: no byte limit) (PRs #906 / #910, 2026-02-19). Every hit is
  deep-copied (``fetch_nearest_cache``), so the entry stays while its copy grows. ``--prompt-cache-bytes`` is
  applied only on the batched path (``trim_to(n_bytes=total - active)`` after a request joins the batch); the server
  builds ``LRUPromptCache(prompt_cache_size)`` without it, so the sequential path (a draft model, a request with a
  seed) never trims by bytes (mlx-lm PRs #1118 / #1392 / #1409, open at 0.32.0). 0.32.0 (d78bf58) is unchanged.
- Entries are each request's whole cache (prompt + generated tokens; v0.31.0–v0.31.1 also checkpoint entries, from
  v0.31.2 the caches at the end of the system prompt and of the user turn), sized ``sum(c.nbytes)``: KVCache keys +
  values as allocated. A cache that can be trimmed (plain KVCache) drops the entries that are its own prefixes on
  insert (v0.31.0 on), so one conversation keeps one; one that cannot (ArraysCache of the linear-attention layers
  of qwen3_next / qwen3_5, a RotatingKVCache past its window) keeps every turn's entry, so one long conversation
  fills the cache on its own.

Posted: mlx-lm issue #1390 (0.31.3, Qwen3.5-4B-MLX-8bit, 48 GB): "Prompt Cache: 10 sequences, 25.69 GB", then
"[METAL] Command buffer execution failed: Insufficient Memory"; the default kept 10 entries of up to ~78k tokens.

Pure computation (no I/O).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..units import GiB
from .base import Step

DEFAULT_PROMPT_CACHE_SIZE = 10          # server.py --prompt-cache-size default; LRUPromptCache(max_size=10) before it
LRU_FROM = "0.28.4"                     # PR #625: LRUPromptCache in server.py
FLAG_FROM = "0.31.0"                    # PRs #906 / #910: --prompt-cache-size, --prompt-cache-bytes
SOURCE = ("mlx_lm/server.py LRUPromptCache, --prompt-cache-size (default 10; v0.31.0+), mlx_lm/models/cache.py "
          "LRUPromptCache.insert_cache")


@dataclass(frozen=True)
class PromptCacheGrowth:
    """What the server's prompt cache adds after enough conversations of ``ctx`` tokens."""
    ctx: int
    per_sequence: int         # bytes of one kept cache at ctx (KV + recurrent state, as the plan counts the active one)
    entries: int              # --prompt-cache-size (its default)
    free: int                 # capacity − the plan's total on the unified device
    trimmable: bool           # plain KV caches: one conversation keeps one entry

    @property
    def full(self) -> int:
        return self.per_sequence * self.entries

    @property
    def fitting(self) -> int:
        """Kept caches of this length that fit beside the plan (≤ entries)."""
        if self.per_sequence <= 0:
            return self.entries
        return max(0, min(self.entries, self.free // self.per_sequence))

    @property
    def overflows(self) -> bool:
        return self.full > self.free


def growth(per_sequence: int, ctx: int, capacity: int, total: int, trimmable: bool,
           entries: int = DEFAULT_PROMPT_CACHE_SIZE) -> PromptCacheGrowth:
    return PromptCacheGrowth(ctx, per_sequence, entries, capacity - total, trimmable)


def step(g: PromptCacheGrowth) -> Step:
    """The --explain line: the figure, whether or not it overflows."""
    keeps = (f"keeps up to {g.entries} earlier caches (LRU)" if g.entries > 1 else
             "keeps the last request's cache (PromptCache, mlx-lm ≤ 0.28.3)")
    return Step("server prompt cache", f"mlx_lm.server {keeps}: {g.entries} × "
                f"{g.per_sequence:,} B (one sequence of {g.ctx:,} tokens, as the KV cache above); not in the table — "
                f"{g.fitting} fit in the {max(g.free, 0) / GiB:.2f} GiB left (--prompt-cache-bytes trims only on the "
                "batched path)", f"{g.full:,} B", SOURCE)


def condition(g: PromptCacheGrowth) -> str | None:
    """The condition under which a server plan runs, when its default prompt cache would pass the working set."""
    if not g.overflows:
        return None
    who = ("conversations" if g.trimmable else
           "turns (this model's linear-attention cache cannot be trimmed, so each turn of one conversation keeps its "
           "own entry)")
    keep = g.fitting
    return (f"mlx_lm.server: its prompt cache keeps the KV of up to {g.entries} earlier requests ({g.full / GiB:.1f} GiB "
            f"at {g.ctx:,} tokens each, {g.per_sequence / GiB:.2f} GiB apiece); after {g.fitting + 1} {who} of this "
            f"length it passes the working set ([METAL] Insufficient Memory) — mlx-lm ≥ {FLAG_FROM}: "
            f"--prompt-cache-size {keep} keeps {keep}; {LRU_FROM}–0.30.7 keep {g.entries} with no flag (upgrade); "
            "≤ 0.28.3 keeps the last request's only; mlx_lm.generate keeps none")


@dataclass(frozen=True)
class Advice:
    """What a plan whose default prompt cache overflows gets: the condition, and the fix (title, command, effect)."""
    condition: str
    fix_title: str
    fix_command: str
    fix_effect: str


def advice(plan: Any) -> Advice | None:
    """For an MLX plan whose server prompt cache, at its default size and the context asked, passes the working set:
    the condition and the server command whose --prompt-cache-size keeps it under (check.py makes the verdict tight
    where the plan prints mlx_lm.server, the display margin's pattern). None for other runtimes and for plans whose
    cache stays under."""
    planner = plan.planner
    if plan.runtime != "mlx" or plan.verdict == "does_not_fit" or not hasattr(planner, "prompt_cache"):
        return None
    a = plan.allocation
    dev = next((d for d in a.devices if d.kind == "unified"), None)
    if dev is None or dev.capacity <= 0 or a.refusal:
        return None
    g = planner.prompt_cache(plan.model, a.settings, dev)
    said = condition(g)
    if said is None:
        return None
    kept = g.fitting * g.per_sequence
    release = getattr(planner, "release_rules", None)     # mlx==X before the flag: the fix is the upgrade
    upgrade = f"upgrade to mlx-lm ≥ {FLAG_FROM} and " if release is not None and not release.prompt_cache_flag else ""
    return Advice(said, f"{upgrade}keep {g.fitting} earlier cache{'s' if g.fitting != 1 else ''} in mlx_lm.server "
                        f"(mlx-lm ≥ {FLAG_FROM})",
                  planner.server_command(plan.model, a.settings, g.fitting),
                  f"prompt cache at {g.ctx:,} tokens: {g.full / GiB:.1f} → {kept / GiB:.1f} GiB, within the working "
                  "set; a conversation whose cache was dropped is prefilled again")



__all__ = ["DEFAULT_PROMPT_CACHE_SIZE", "PromptCacheGrowth", "condition", "Advice", "advice", "growth", "step"]
