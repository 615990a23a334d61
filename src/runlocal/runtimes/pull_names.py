"""The names other tools pull a model by, read as the catalog model and quant they name, offline.

* An Ollama library tag (``gpt-oss:20b``, ``qwen3:30b``, ``qwen3:30b-a3b-q8_0``): ``ollama run`` takes it. The
  library names and full tags are data/ollama_tags.json's (https://ollama.com/library/<name>/tags); a short tag
  (``qwen3:30b``) is the catalog model the name already resolves to, pulled at the library's default quant.
* Ollama's Hub form ``hf.co/<repo>:<quant>`` (https://huggingface.co/docs/hub/ollama) and llama-server's ``-hf``
  form ``<repo>:<quant>`` (common/arg.cpp: "-hf <user>/<model>[:quant]"), where ``<repo>`` is a catalog model's
  GGUF repo (ollama_tags.json ``hf``): the catalog model at that quant — what the repo's file of that quant holds.

Pure lookups over the package's data files (beside published.py, which reads the same tables); anything else
is left to model/resolve.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

_TAG = re.compile(r"^([a-z0-9][a-z0-9._-]*):([a-z0-9][a-z0-9._-]*)$", re.IGNORECASE)
_REPO_QUANT = re.compile(r"^([\w.-]+/[\w.-]+)(?::([\w.-]+))?$")


@dataclass(frozen=True)
class PullName:
    alias: str              # the catalog model
    quant: str | None       # the GGUF type the name pulls; None: the runtime's default (Q4_K_M, Ollama's default tag)
    ollama: bool            # a name `ollama run` takes (a library tag, or hf.co/…)
    form: str               # how the name was read, for the answer's note


@cache
def _library() -> tuple[frozenset[str], dict[str, tuple[str, str]], dict[str, str]]:
    """(library names; full tag → (alias, GGUF type); GGUF repo → alias), lower-cased."""
    from .published import _data, library_tags

    libraries: set[str] = set()
    tags: dict[str, tuple[str, str]] = {}
    repos: dict[str, str] = {}
    for alias, entry in _data("ollama_tags.json")["models"].items():
        if entry.get("library"):
            libraries.add(entry["library"].lower())
            for quant, tag in library_tags(entry).items():
                tags.setdefault(tag.lower(), (alias, quant))
        if entry.get("hf"):
            repos.setdefault(entry["hf"].lower(), alias)
    return frozenset(libraries), tags, repos


def read_pull_name(ref: str) -> PullName | None:
    """The catalog model and quant an Ollama tag or a Hub GGUF repo with a quant names; None: not such a name."""
    from ..model.catalog import find_entry

    ref = ref.strip()
    hub_form = ref.lower().startswith("hf.co/")
    rest = ref[len("hf.co/"):] if hub_form else ref
    libraries, tags, repos = _library()
    if "/" in rest:
        m = _REPO_QUANT.match(rest)
        alias = repos.get(m.group(1).lower()) if m else None
        if m is None or alias is None or (not hub_form and m.group(2) is None):
            return None
        quant = _gguf_type(m.group(2)) if m.group(2) else None
        form = ("Ollama's Hub name hf.co/<repo>:<quant>" if hub_form else "llama-server's -hf name <repo>:<quant>")
        return PullName(alias, quant, hub_form, f"{ref}: {form}, the catalog model {alias}'s GGUF repo")
    m = _TAG.match(ref)
    if hub_form or m is None or m.group(1).lower() not in libraries:
        return None
    if ref.lower() in tags:
        alias, quant = tags[ref.lower()]
        return PullName(alias, quant, True, f"{ref}: an Ollama library tag, the catalog model {alias} at {quant}")
    entry = find_entry(ref)
    if entry is None:
        return None
    return PullName(entry["alias"], None, True, f"{ref}: an Ollama library tag, read as the catalog model "
                                                f"{entry['alias']}")


def _gguf_type(quant: str) -> str:
    from .published import gguf_quant

    return gguf_quant(quant)
