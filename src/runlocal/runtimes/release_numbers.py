"""A release's text as numbers to compare, shared by versions.parse_version and the release rules that read a
release's text themselves (ollama_early.py): it imports nothing of runlocal, so neither imports the other for it."""

from __future__ import annotations

import re

PEP440 = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?(?:[.+\-]?(?:rc|post|dev|a|b|cu|rocm)[\w.]*)?$")
BUILD = re.compile(r"^b?(\d{1,6})$")      # a llama.cpp build: b6500


def dotted_key(text: str) -> tuple[int, ...] | None:
    """'0.2.0' → (0, 2, 0), 'v0.4.1-rc2' → (0, 4, 1); None where ``text`` is no release number."""
    m = PEP440.match(text)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None
