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
from dataclasses import dataclass, replace
from functools import cache

_TAG = re.compile(r"^([a-z0-9][a-z0-9._-]*):([a-z0-9][a-z0-9._-]*)$", re.IGNORECASE)
_REPO_QUANT = re.compile(r"^([\w.-]+/[\w.-]+)(?::([\w.-]+))?$")


@dataclass(frozen=True)
class PullName:
    alias: str              # the catalog model
    quant: str | None       # the GGUF type the name pulls; None: the runtime's default (Q4_K_M, Ollama's default tag)
    ollama: bool            # a name `ollama run` takes (a library tag, or hf.co/…)
    form: str               # how the name was read, for the answer's note
    hub: bool = False       # Ollama's Hub form hf.co/<repo>:<quant>: a file of that repo, not the library's blob


@cache
def _library() -> tuple[dict[str, list[str]], dict[str, tuple[str, str]], dict[str, str]]:
    """(library name → its size tags; full tag → (alias, GGUF type); GGUF repo → alias), lower-cased. A size tag is
    a quant tag without its quant (``deepseek-r1:671b`` of ``671b-{q}``): the library page lists both, the size tag
    pulling the library's default quant (https://ollama.com/library/deepseek-r1/tags). ``<library>:latest`` is
    among the full tags where the data records which size it pulls (``latest``, cited per entry)."""
    from .published import _data, library_tags

    libraries: dict[str, list[str]] = {}
    tags: dict[str, tuple[str, str]] = {}
    repos: dict[str, str] = {}
    for alias, entry in _data("ollama_tags.json")["models"].items():
        if entry.get("library"):
            library = entry["library"].lower()
            sizes = libraries.setdefault(library, [])
            for quant, tag in library_tags(entry).items():
                tags.setdefault(tag.lower(), (alias, quant))
            if entry.get("tag", "").endswith("-{q}"):
                sizes.append(f"{library}:{entry['tag'][:-len('-{q}')]}".lower())
                tags.setdefault(sizes[-1], (alias, ""))
            elif "tags" in entry:
                sizes.extend(t.lower() for t in library_tags(entry).values())
            if entry.get("latest"):     # latest pulls what this model's size tag pulls
                tags.setdefault(f"{library}:latest", tags[sizes[-1]])
        if entry.get("hf"):
            repos.setdefault(entry["hf"].lower(), alias)
    return libraries, tags, repos


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
        return PullName(alias, quant, hub_form, f"{ref}: {form}, the catalog model {alias}'s GGUF repo", hub_form)
    if not hub_form and ":" not in ref and ref.lower() in libraries and find_entry(ref) is None:
        # a bare library name (`ollama run qwen3`): Ollama reads it as <name>:latest (types/model/name.go's default
        # tag); a name that is also a catalog model (phi4, mixtral) stays that model
        latest = read_pull_name(f"{ref}:latest")
        if latest is not None:
            return replace(latest, form=f"{ref}: an Ollama library name, which Ollama reads as {ref}:latest; "
                                        + latest.form.split(": ", 1)[1])
    m = _TAG.match(ref)
    if hub_form or m is None or m.group(1).lower() not in libraries:
        return None
    if m.group(2).lower() == "latest" and ref.lower() not in tags:
        return _latest(ref, libraries[m.group(1).lower()], tags)
    if ref.lower() in tags:
        alias, quant = tags[ref.lower()]
        which = " (the library's default tag, this size)" if m.group(2).lower() == "latest" else ""
        if not quant:       # a size tag: the library's default quant, as a short tag is
            return PullName(alias, None, True, f"{ref}: an Ollama library tag{which}, read as the catalog model {alias}")
        return PullName(alias, quant, True, f"{ref}: an Ollama library tag{which}, the catalog model {alias} at {quant}")
    entry = find_entry(ref)
    if entry is None:
        return None
    return PullName(entry["alias"], None, True, f"{ref}: an Ollama library tag, read as the catalog model "
                                                f"{entry['alias']}")


# a GGUF file's name: <stem>-<type>[-00001-of-00003].gguf, the type as GGUF repos spell it in their file names
# (Qwen3-8B-Q4_K_M.gguf, Qwen3-8B-UD-Q4_K_XL.gguf, gpt-oss-20b-mxfp4.gguf, Meta-Llama-3.1-8B-Instruct-f16.gguf)
_GGUF_FILE = re.compile(r"^(?P<stem>.+?)[-.](?P<quant>(?:UD-)?(?:I?Q\d[A-Z0-9_]*|BF16|F16|F32|MXFP4(?:_MOE)?))"
                        r"(?:-\d{5}-of-\d{5})?\.gguf$", re.IGNORECASE)


def read_gguf_file_name(name: str) -> PullName | None:
    """The model id llama-server reports (/v1/models: the path given to -m, or with -hf its cache file
    ``<owner>_<repo>_<file>``, unless --alias names it): the catalog model whose GGUF repo names its files so (the
    repo's name less -GGUF: unsloth/Qwen3-8B-GGUF holds Qwen3-8B-Q4_K_M.gguf), or whose name the stem is, at the
    type the name carries; None where the file name names no catalog model."""
    from ..model.catalog import find_entry

    base = name.strip().replace("\\", "/").rsplit("/", 1)[-1]
    base = re.split(r"-GGUF_", base, flags=re.IGNORECASE)[-1]      # -hf's cache name: <owner>_<repo>-GGUF_<file>
    m = _GGUF_FILE.match(base)
    if m is None:
        return None
    stem = m.group("stem")
    _, _, repos = _library()
    by_stem = {repo.split("/")[-1].removesuffix("-gguf"): alias for repo, alias in repos.items()}
    alias = by_stem.get(stem.lower()) or (find_entry(stem) or {}).get("alias")
    if alias is None:
        return None
    quant = _gguf_type(m.group("quant"))
    return PullName(alias, quant, False, f"{name}: a GGUF file's name, the catalog model {alias} at {quant}")


@dataclass(frozen=True)
class ReadModel:
    """A request's model, runtime and quant once a pull name in it is read (read_model_name)."""

    model: str
    runtime: str | None     # None: not given, and the name does not choose one (request.DEFAULT_RUNTIME plans it)
    quant: str | None
    notes: tuple[str, ...]  # how the name was read, for the answer
    ollama_pull: str | None = None      # Ollama plans: the hf.co/<repo>:<quant> name given, pulled as given


def read_model_name(model: str, runtime: str | None, quant: str | None) -> ReadModel:
    """The one reading of a pull name that every command's model goes through (check, curve, best, compare, cost;
    CLI, HTTP API, MCP, site). A name `ollama run` takes plans Ollama when no runtime is given: whoever types
    `gpt-oss:20b` runs Ollama. A runtime given — `--runtime llama.cpp` included — is kept. The name's GGUF type
    applies to the GGUF engines only (llama.cpp, Ollama); another engine plans the catalog model in its own default
    format, and the note says so (review17c finding 7)."""
    from .published import GGUF_RUNTIMES

    name = read_pull_name(model)
    if name is None:
        return ReadModel(model, runtime, quant, ())
    how = ""
    if name.ollama and runtime is None:
        runtime = "ollama"
        how = f"; planned under Ollama, which runs this name ({name.alias} plans it under llama.cpp)"
    engine = (runtime or "llama.cpp").split("==", 1)[0].strip().lower()
    if name.quant and not quant:
        if engine in GGUF_RUNTIMES:
            quant = name.quant
        else:
            how += (f"; its {name.quant} is a GGUF file, which {engine} does not run here: {engine} is planned on the "
                    f"catalog model {name.alias} in its own default format")
    hub = name.hub and engine == "ollama" and quant == name.quant and name.quant is not None
    return ReadModel(name.alias, runtime, quant, (name.form + how,), model.strip() if hub else None)


def _latest(ref: str, sizes: list[str], tags: dict[str, tuple[str, str]]) -> PullName:
    """``<name>:latest``, the tag Ollama reads a bare name as (ollama types/model/name.go: the default tag is
    "latest"), where ollama_tags.json does not record which size tag it is: a library with one size is that model;
    else the error lists the size tags to name."""
    from ..errors import ModelNotFoundError

    found = {tags[t] for t in sizes if t in tags}
    if len({alias for alias, _ in found}) == 1:
        alias, quant = found.pop()
        return PullName(alias, quant or None, True, f"{ref}: an Ollama library tag (the default one), read as the catalog model "
                                           f"{alias}, the library's one size")
    library = ref.split(":", 1)[0]
    raise ModelNotFoundError(f"model: {ref} is the Ollama library's default tag for {library}, and which size it is "
                             f"is not recorded here: name a size tag ({', '.join(sorted(sizes))})")


def _gguf_type(quant: str) -> str:
    from .published import gguf_quant

    return gguf_quant(quant)
