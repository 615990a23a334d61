"""One line against the knowledge base and the signals: the index of every entry's signatures (with a literal anchor
each and one gate regex over the anchors), the words that make a line matter at all, the advice and hedges a line is
read without, and the facts of one line (its entries, severity, a dead engine, a ggml footer's function), cached per
distinct short line. Pure: the same line always gives the same facts. Split from classify.py (session 12, diagnose28)
to keep the streaming scanner under ~800 lines."""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import Any

from . import kb, runtimes, signals
from .extract import TRIGGERS, trie_regex

_FOOTER = re.compile(r"current device: \d+, in function (\w+)")


def _anchor(pattern: str) -> str:
    """The longest literal run a pattern requires (lower-cased), or "" when there is none."""
    if sys.version_info >= (3, 11):
        from re import _parser as sre_parse
        from re._constants import BRANCH, LITERAL
    else:  # pragma: no cover - Python 3.10
        import sre_parse
        from sre_constants import BRANCH, LITERAL
    parsed: list[tuple[Any, Any]] = list(sre_parse.parse(pattern).data)   # (opcode, argument) pairs
    if len(parsed) == 1 and parsed[0][0] is BRANCH:  # a|b at top level: no literal is required
        return ""
    best, run = "", []
    for op, av in parsed:
        if op is LITERAL:
            run.append(chr(av))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    if len(run) > len(best):
        best = "".join(run)
    return best.lower()


class _Index:
    """All signatures, with a literal anchor each, and one gate regex over the anchors."""

    def __init__(self) -> None:
        self.items: list[tuple[str, kb.Entry, re.Pattern[str]]] = []
        anchors = set()
        self.always = False
        for entry, src, pat in kb.iter_signatures():
            a = _anchor(src)
            if not a.strip():
                self.always = True
            anchors.add(a)
            self.items.append((a, entry, pat))
        self.anchors = frozenset(a for a in anchors if a.strip())
        self.gate = re.compile(trie_regex(self.anchors))

    def match(self, line: str, low: str) -> list[kb.Entry]:
        if not self.always and not self.gate.search(low):
            return []
        seen: dict[str, kb.Entry] = {}
        for anchor, entry, pat in self.items:
            if entry.id not in seen and anchor in low and pat.search(line):
                seen[entry.id] = entry
        return list(seen.values())


_INDEX: _Index | None = None


def _index() -> _Index:
    global _INDEX
    if _INDEX is None:
        _INDEX = _Index()
    return _INDEX


_GATE: re.Pattern[str] | None = None


def _any_gate(index: _Index) -> re.Pattern[str]:
    """One regex over every word that can make a line matter (built once per process: it is large)."""
    global _GATE
    if _GATE is None:
        _GATE = re.compile(trie_regex(index.anchors | TRIGGERS | set(runtimes.RUNTIME_TOKENS) | signals.GATE_WORDS))
    return _GATE



_ADVICE = re.compile(r"\bif (?:you|reserved)\b|\bconsider (?:decreas|lower|reduc)|\bto avoid\b|\bmay lead to\b")
# a purpose clause ("… for your GPU to try to prevent out-of-memory errors"): removed up to the end of its sentence or
# a "but" ("set it to help prevent OOM but still get CUDA out of memory" still reports one)
_PREVENTING = re.compile(r"\b(?:to|help|helps) (?:try to )?prevent\b(?:(?!\bbut\b)[^.;!?])*")


def _advice_removed(low: str) -> str:
    """The line up to the advice a runtime appends ("If you are running out of memory, consider…") or the guess
    it hedges ("… most likely due to out of memory"), and without the name of anything the code did not find
    ("has no attribute 'OutOfMemoryError'"), so that those words are not read as the failure. A lack of memory asked as
    a question is removed by itself: the line goes on after its question mark (signals.QUESTION_HEDGE)."""
    if "attribute" in low or "import name" in low or "module named" in low:
        low = signals.MISSING_NAME.sub(" ", low)
    if "prevent" in low:
        low = _PREVENTING.sub(" ", low)
    if "?" in low:
        low = signals.QUESTION_HEDGE.sub(" ", low)
    cuts = [m.start() for m in (_ADVICE.search(low), signals.HEDGE.search(low)) if m]
    return low[:min(cuts)] if cuts else low


CACHED_LINE_MAX = 512       # lines up to this long have their entry kept (at most 4,096 of them: ~2 MB)


def _line_facts(line: str, low: str) -> tuple[tuple[kb.Entry, ...], str | None, bool, str | None]:
    """What one line says on its own: the entries whose signatures match, its severity, whether it reports a dead
    engine, and the function a ggml error footer names. Pure: the same line always gives the same facts."""
    footer = _FOOTER.search(low)
    return (tuple(_index().match(line, low)), signals.severity_of_line(low), signals.engine_dead(low),
            footer.group(1) if footer else None)


@lru_cache(maxsize=4096)
def _short_line_facts(line: str) -> tuple[tuple[kb.Entry, ...], str | None, bool, str | None]:
    return _line_facts(line, line.lower())


def _facts_of_line(line: str, low: str) -> tuple[tuple[kb.Entry, ...], str | None, bool, str | None]:
    """_line_facts, worked out once per distinct short line (logs repeat metrics and progress lines by the
    thousand, as for _line_entry below)."""
    return _short_line_facts(line) if len(line) <= CACHED_LINE_MAX else _line_facts(line, low)


@lru_cache(maxsize=4096)
def _short_line_entry(low: str, runtime: str | None) -> str | None:
    return signals.line_entry(_advice_removed(low), runtime)


def _line_entry(low: str, runtime: str | None) -> str | None:
    """signals.line_entry of the line without its advice. Logs repeat short lines (metrics, progress) by the
    thousand, so a short line's entry is worked out once; both functions are pure."""
    if len(low) <= CACHED_LINE_MAX:
        return _short_line_entry(low, runtime)
    return signals.line_entry(_advice_removed(low), runtime)


