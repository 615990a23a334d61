"""Thinking models and the context a plan runs at (review22 #8): a model that reasons before it answers fills its
context with that reasoning first, so a plan whose context is shorter than the reasoning the model's family is known
to write (data/thinking_models.json, each family cited: which models think by default, and the longest reasoning
chain a published source gives) says so — most often the 4,096 tokens llama-server's --fit falls back to on a small
card, which nothing else in the plan flags. Pure lookups over the package's data file."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

# who chose a context nobody asked for, in the plan's words
_CHOSEN_BY = {"llama.cpp": "llama-server --fit", "ollama": "Ollama"}


@cache
def _families() -> tuple[dict[str, Any], ...]:
    doc = json.loads(resources.files("runlocal.data").joinpath("thinking_models.json").read_text(encoding="utf-8"))
    return tuple(doc["families"])


def thinking_family(alias: str | None) -> dict[str, Any] | None:
    """The thinking family a catalog alias belongs to (its name, reasoning_tokens and sources), or None."""
    if not alias:
        return None
    return next((f for f in _families() if re.fullmatch(f["aliases"], alias)), None)


def short_context_note(alias: str | None, ctx: int | None, asked: bool, runtime: str,
                       served_cap: int | None = None) -> str | None:
    """The note for a thinking model planned at a context shorter than its family's reasoning: None otherwise.
    ``served_cap``: the longest context the release serves whatever is asked (vLLM 0.9.1's tokenizer cap,
    runtimes/context_limit.py): a longer --ctx on this release is no remedy (review23 finding 1: the note told a
    user who had asked --ctx 32768, and been served 16,384, to plan --ctx 32768)."""
    family = thinking_family(alias)
    if family is None or not ctx or ctx >= family["reasoning_tokens"]:
        return None
    budget = family["reasoning_tokens"]
    head = f"{alias} thinks before it answers ({family['name']}) and its reasoning can run to {budget:,} tokens: "
    tail = ", or turn thinking off for short replies (sources: data/thinking_models.json)"
    if served_cap is not None and served_cap < budget:
        whose = ("asked" if asked else f"{_CHOSEN_BY.get(runtime, runtime)} chose") if ctx < served_cap else \
            "this release serves at most (whatever is asked)"
        return (head + f"the {ctx:,}-token context {whose} can fill before a long answer ends — plan --ctx {budget} "
                f"on a release that serves it (this one stops at {served_cap:,}) where the memory allows" + tail)
    whose = "asked" if asked else f"{_CHOSEN_BY.get(runtime, runtime)} chose"
    return (head + f"the {ctx:,}-token context {whose} can fill before a long answer ends — plan --ctx {budget} where "
            f"the memory allows{'' if asked else ' (the fixes give what a longer context costs)'}" + tail)
