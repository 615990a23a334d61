"""Round 67's source list: every GitHub thread (owner/repo#N, or a PR) that round 66's collector named as "seen only
there" in round66_queries.md, in the file's order, first mention kept.

The lists sit in the per-query parentheticals "(The reading search(es) also showed A, B, …: seen only there.)" (queries
6, 12, 15, 16, 19, 26). The "Why so few" bullet ("Many 2026 memory threads were seen only in reading searches (…)")
only repeats eight of them in short names and is not read; Q41's "seen only there" names a Hugging Face discussion by
a profile's activity line, no owner/repo#N, and is not a GitHub thread. Items abbreviate: "#16506" or
"PR #1706" repeat the previous item's repository; "llama.cpp #27749" names a repository by its short name, resolved to
the owner/name that the same file spells in full (the six main trackers' short names name the tracker; a short name
the file never spells in full, or spells for two repositories, is an error).
Run: python3 measurements/public_errors/round67_make/extract_threads.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "round66_queries.md"   # next/ when it ran; tuning folder since diagnose21
FULL = re.compile(r"\b([A-Za-z0-9][\w.-]*)/([\w.-]+?)(?=\s*(?:PRs?\s*)?#\d)")
ITEM = re.compile(r"(?:(?P<repo>[A-Za-z0-9][\w./-]*?)\s*)?(?P<pr>PRs?\s+)?#(?P<n>\d+)")


def short_names(text: str) -> dict[str, str]:
    names: dict[str, set[str]] = {}
    for m in FULL.finditer(text):
        names.setdefault(m.group(2).lower(), set()).add(f"{m.group(1)}/{m.group(2)}")
    # the six main trackers' short names (as the corpus's ids spell them) name the tracker, not a fork
    main = {"llama.cpp": "ggml-org/llama.cpp", "ollama": "ollama/ollama", "vllm": "vllm-project/vllm",
            "sglang": "sgl-project/sglang", "mlx": "ml-explore/mlx", "mlx-lm": "ml-explore/mlx-lm",
            "transformers": "huggingface/transformers"}
    return {**{k: next(iter(v)) for k, v in names.items() if len(v) == 1}, **main}


def lists(text: str) -> list[str]:
    """The comma lists that name threads seen only in reading searches."""
    return [m.group(1) for m in re.finditer(r"also showed (.*?): seen only there", text)]


def threads(text: str) -> list[tuple[str, int, bool]]:
    names, seen, result = short_names(text), set(), []
    for chunk in lists(text):
        repo, is_pr = None, False
        for part in re.split(r",\s*|\band\b", chunk):
            part = part.strip().rstrip(".").replace("…", "").strip()
            m = re.fullmatch(r"(?:(?P<repo>[A-Za-z0-9][\w./-]*?)\s*)?(?P<pr>PRs?\s+)?#(?P<n>\d+)|(?P<hyph>[\w./-]+)#(?P<n2>\d+)",
                             part)
            if not m:
                if part:
                    print(f"unparsed item: {part!r}", file=sys.stderr)
                continue
            name = m.group("repo") or m.group("hyph")
            if name in ("PR", "PRs"):      # "PR #57926": the previous item's repository, a PR
                name, pr_word = None, True
            else:
                pr_word = bool(m.group("pr"))
            n = int(m.group("n") or m.group("n2"))
            if name:
                repo = name if "/" in name else names.get(name.lower())
                if repo is None:
                    raise SystemExit(f"short name {name!r} not spelled in full in the file")
                is_pr = pr_word
            elif pr_word:
                is_pr = True
            key = (repo.lower(), n)
            if key not in seen:
                seen.add(key)
                result.append((repo, n, is_pr))
    return result


if __name__ == "__main__":
    for i, (repo, n, pr) in enumerate(threads(SRC.read_text(encoding="utf-8")), 1):
        print(f"{i}. {repo}{' PR ' if pr else ''}#{n}")
