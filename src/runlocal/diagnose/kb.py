"""The errors knowledge base: one Markdown file per known failure, shipped in ``runlocal/data/errors``.

Each file is YAML front matter (between ``---`` lines) followed by an explanation in Markdown.
The front matter fields are listed in :data:`REQUIRED_FIELDS`; ``signatures`` are regular
expressions matched case-insensitively against one log line at a time, and ``priority`` decides
which entry wins when several match (see ``classify.py`` for the full precedence rules).

Entries are parsed once, lazily, and the compiled signatures are cached.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any

import yaml

CATEGORIES = (
    "cuda_oom_load",
    "cuda_oom_long_context",
    # a CUDA out-of-memory whose text says neither phase (classify.PHASE_UNSTATED_ID): the answer gives both phases'
    # fixes and claims neither, so a scorer counts it exact for neither the load nor the run (session 21, diagnose21b)
    "cuda_oom_phase_unstated",
    "vllm_no_kv_blocks",
    "vllm_engine_dead",
    "vllm_gpu_util",
    "sglang_kv_overflow",
    "ollama_system_memory",
    "oom_killer",
    "llamacpp_alloc_fail",
    "metal_oom",
    "rocm_oom",
    "fragmentation",
    "offload_error",
    "not_memory",
    # a failure whose text does not say whether memory ran out (a runner that died and names no cause): the answer
    # says what to read to tell, never a verdict
    "unknown",
)
#: every category that means "it did not fit" (everything except not_memory and unknown)
MEMORY_CATEGORIES = frozenset(CATEGORIES) - {"not_memory", "unknown"}


def memory_side(category: str) -> bool | None:
    """Whether an answer's category says memory ran out (True), says it did not (False), or says neither (None:
    ``unknown`` tells the user what to read to find out). A scorer of memory / not memory counts None as wrong on
    either side: "cannot tell" is not the verdict "not memory"."""
    if category == "unknown":
        return None
    return category in MEMORY_CATEGORIES

REQUIRED_FIELDS = (
    "id", "title", "category", "runtimes", "signatures", "priority", "cause",
    "solutions", "alternatives", "related", "verified",
)

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.S)


@dataclass(frozen=True)
class Solution:
    """One way out, with the command to run per runtime ("any" = whatever the runtime)."""

    title: str
    commands: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)

    def command_for(self, runtime: str | None) -> str | None:
        """The command for ``runtime``; "any" as a fallback; None if this solution is for other runtimes."""
        if runtime is None:
            return next(iter(self.commands.values()), "")
        if runtime in self.commands:
            return self.commands[runtime]
        return self.commands.get("any")

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "commands": dict(self.commands)}


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    category: str
    runtimes: tuple[str, ...]
    signatures: tuple[str, ...]
    priority: int
    cause: str
    solutions: tuple[Solution, ...]
    alternatives: tuple[str, ...]
    related: tuple[str, ...]
    verified: Mapping[str, str] = field(hash=False)
    body: str = ""

    @property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        """The compiled signatures (case-insensitive), compiled once per process."""
        return _compile(self.signatures)

    def matches(self, line: str) -> bool:
        return any(p.search(line) for p in self.patterns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "category": self.category,
            "runtimes": list(self.runtimes), "signatures": list(self.signatures),
            "priority": self.priority, "cause": self.cause,
            "solutions": [s.to_dict() for s in self.solutions],
            "alternatives": list(self.alternatives), "related": list(self.related),
            "verified": dict(self.verified), "body": self.body,
        }


@functools.cache
def _compile(signatures: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(s, re.IGNORECASE) for s in signatures)


def _str_list(value: Any, name: str, source: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{source}: '{name}' must be a list of strings")
    return tuple(value)


def parse_entry(text: str, source: str = "<entry>") -> Entry:
    """Parse one knowledge-base file; raises ValueError naming the file and the field at fault."""
    m = _FRONT_MATTER.match(text.lstrip("\ufeff"))
    if not m:
        raise ValueError(f"{source}: no YAML front matter between '---' lines")
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        raise ValueError(f"{source}: invalid YAML front matter: {e}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{source}: front matter is not a mapping")
    missing = [f for f in REQUIRED_FIELDS if f not in meta]
    if missing:
        raise ValueError(f"{source}: missing field(s) {', '.join(missing)}")
    if meta["category"] not in CATEGORIES:
        raise ValueError(f"{source}: unknown category '{meta['category']}'")
    if not isinstance(meta["priority"], int) or isinstance(meta["priority"], bool):
        raise ValueError(f"{source}: 'priority' must be an integer")
    signatures = _str_list(meta["signatures"], "signatures", source)
    for s in signatures:
        try:
            re.compile(s, re.IGNORECASE)
        except re.error as e:
            raise ValueError(f"{source}: invalid signature {s!r}: {e}") from None
    solutions = []
    for i, sol in enumerate(meta["solutions"] or []):
        if not isinstance(sol, dict) or not isinstance(sol.get("title"), str):
            raise ValueError(f"{source}: solution {i + 1} needs a 'title'")
        commands = sol.get("commands") or {}
        if not isinstance(commands, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in commands.items()):
            raise ValueError(f"{source}: solution {i + 1} 'commands' must map runtime to command")
        solutions.append(Solution(sol["title"], MappingProxyType(dict(commands))))
    verified = meta["verified"]
    if not isinstance(verified, dict) or not {"date", "against"} <= set(verified):
        raise ValueError(f"{source}: 'verified' needs 'date' and 'against'")
    return Entry(
        id=str(meta["id"]), title=str(meta["title"]), category=meta["category"],
        runtimes=_str_list(meta["runtimes"], "runtimes", source), signatures=signatures,
        priority=meta["priority"], cause=" ".join(str(meta["cause"]).split()),
        solutions=tuple(solutions),
        alternatives=_str_list(meta["alternatives"], "alternatives", source),
        related=_str_list(meta["related"], "related", source),
        verified=MappingProxyType({k: str(v) for k, v in verified.items()}),
        body=m.group(2).strip(),
    )


@functools.lru_cache(maxsize=1)
def _entries() -> tuple[Entry, ...]:
    folder = resources.files("runlocal.data").joinpath("errors")
    out = []
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".md"):
            out.append(parse_entry(item.read_text(encoding="utf-8"), f"errors/{item.name}"))
    ids = [e.id for e in out]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise ValueError(f"errors knowledge base: duplicate id(s) {', '.join(sorted(dupes))}")
    return tuple(out)


def load_entries() -> list[Entry]:
    """All knowledge-base entries, sorted by id (parsed once per process)."""
    return list(_entries())


def get(entry_id: str) -> Entry | None:
    return next((e for e in _entries() if e.id == entry_id), None)


def by_category(category: str) -> list[Entry]:
    return [e for e in _entries() if e.category == category]


_WORD = re.compile(r"[a-z0-9_.]+")
_STOP = frozenset("the an is it its this that these those to of in on for with and or what be by at as from my "
                  "me we you your are was were do does did how why when there here has have had".split())


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def search(query: str) -> list[Entry]:
    """Entries matching ``query``, best first.

    A query can be words ("kv cache vllm"), an id or category, or a pasted error line: an entry
    whose signature matches the query as a log line ranks first.
    """
    q = (query or "").strip()
    if not q:
        return load_entries()
    ql = q.lower()
    words = [w for w in _words(ql) if len(w) > 1 and w not in _STOP] or [ql]
    scored: list[tuple[int, int, str, Entry]] = []
    for e in _entries():
        score = 0
        if ql in (e.id, e.category):
            score += 100
        elif ql in e.id or ql in e.title.lower():
            score += 40
        if e.matches(q):
            score += 60
        title, cause = _words(e.title), _words(e.cause)
        sig_text = " ".join(e.signatures).lower()
        body = e.body.lower()
        body_only = 0
        for w in words:
            before = score
            if w in e.id or w == e.category:
                score += 12
            if w in title:
                score += 10
            if w in sig_text:
                score += 8
            if w in cause:
                score += 4
            if w in (r.lower() for r in e.runtimes):
                score += 4
            if score == before and w in body:
                score += 1
                body_only += 1
        if score and score == body_only and body_only * 2 <= len(words):
            continue  # only common words of the explanation matched ("this", "with"): not a hit
        if score:
            scored.append((-score, -e.priority, e.id, e))
    scored.sort()
    return [t[3] for t in scored]


def iter_signatures(entries: Iterable[Entry] | None = None):
    """(entry, pattern source, compiled pattern) for every signature."""
    for e in entries if entries is not None else _entries():
        for src, pat in zip(e.signatures, e.patterns):
            yield e, src, pat
