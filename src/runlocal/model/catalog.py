"""The embedded model catalog: popular open models' config.json, usable offline by alias."""

from __future__ import annotations

import difflib
import json
import re
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from ..errors import UnknownModelError
from .spec import ModelSpec


@lru_cache(maxsize=4096)
def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


@lru_cache(maxsize=1)
def load_entries() -> tuple[dict[str, Any], ...]:
    text = resources.files("runlocal.data").joinpath("models.json").read_text(encoding="utf-8")
    return tuple(json.loads(text)["models"])


@lru_cache(maxsize=1)
def _index() -> dict[str, dict[str, Any]]:
    index: dict[str, dict[str, Any]] = {}
    for entry in load_entries():
        for name in (entry["alias"], *entry.get("aliases", ()), entry["repo_id"], entry["repo_id"].split("/")[-1]):
            index.setdefault(_norm(name), entry)
    return index


def find_entry(name: str) -> dict[str, Any] | None:
    return _index().get(_norm(name))


def listing() -> list[dict[str, Any]]:
    """One row per catalog model: what `runlocal models --json` prints, the MCP `models` tool and GET /api/v1/models
    answer (model_type: the config's architecture, as the API listed it first)."""
    return [listing_row(e) for e in load_entries()]


def listing_row(entry: dict[str, Any]) -> dict[str, Any]:
    return {"alias": entry["alias"], "repo_id": entry["repo_id"], "published_params": entry.get("published_params"),
            "model_type": entry["config"].get("model_type")}


def matching(query: str | None) -> list[dict[str, Any]]:
    """The catalog entries whose alias, repo id or one of its other names holds ``query`` (any case): the filter of
    `runlocal models --query`, GET /api/v1/models?query= and the site's /models page; all of them for none."""
    q = (query or "").strip().lower()
    return [e for e in load_entries() if not q or q in e["alias"].lower() or q in e["repo_id"].lower()
            or any(q in a.lower() for a in e.get("aliases", ()))]


def aliases() -> list[str]:
    return [e["alias"] for e in load_entries()]


def lookup(name: str) -> ModelSpec:
    """Alias → ModelSpec; unknown names raise UnknownModelError with close suggestions."""
    entry = find_entry(name)
    if entry is None:
        names = aliases()
        close = difflib.get_close_matches(name.lower(), names, n=5, cutoff=0.5)
        if not close:
            key = _norm(name)
            close = [a for a in names if key[:6] and _norm(a).startswith(key[:6])][:5]
        raise UnknownModelError(name, close)
    return _spec(entry["alias"])


@cache
def _spec(alias: str) -> ModelSpec:
    """Built once per process: a ModelSpec is frozen, and the planners' caches key on the object."""
    from .hf_config import spec_from_config

    entry = find_entry(alias)
    assert entry is not None
    return spec_from_config(entry["config"], id=entry["alias"], source=f"catalog:{entry['alias']}",
                            repo_id=entry["repo_id"], quant_config=entry.get("hf_quant_config"))


def sibling_spec(repo_id: str) -> ModelSpec | None:
    """Offline only: a Hub id the catalog lacks but whose repo name is a catalog name of the same owner
    (``Qwen/Qwen1.5-14B`` for the catalog's Qwen1.5-14B-Chat, ``meta-llama/Llama-3.1-8B`` for its Instruct):
    one architecture under base and instruct names, so that entry's config, labelled with the id asked for."""
    owner, _, name = repo_id.partition("/")
    entry = _index().get(_norm(name)) if owner and name else None
    if entry is None or entry["repo_id"].split("/")[0].lower() != owner.lower():
        return None
    from dataclasses import replace

    note = (f"offline and not in the Hugging Face cache: read with the catalog's {entry['alias']} config "
            f"({entry['repo_id']}), the same owner's checkpoint under that name (base and instruct share one architecture)")
    spec = _spec(entry["alias"])
    # a hub: source, so neither the catalog's GGUF tables nor its Ollama/MLX names are reused for another repo
    return replace(spec, id=repo_id, repo_id=repo_id, source=f"hub:{repo_id}", notes=(*spec.notes, note))


def published_params(spec: ModelSpec) -> int | None:
    entry = find_entry(spec.id)
    return entry.get("published_params") if entry else None
