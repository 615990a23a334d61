"""Append query 3 records to found.jsonl (RULE.md Amendment 4): stdin holds one JSON object a line with `alias`,
`hf` (or null), `file` (or null), `split`, `why`, `code` (the cited hits: id, line, and repo / path / sha256 where
known), optionally `hf_source` (the huggingface.co URL the line names), `mmproj`, `b` (true when query 3b was run too)
or `not_queried` (true for a target not reached). The queries logged come from targets3.py, so the log names exactly
what was asked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from targets3 import queries, targets3

HERE = Path(__file__).resolve().parent
LAST = {}
for line in (HERE / "found.jsonl").read_text().splitlines():
    if line.strip():
        LAST[json.loads(line)["alias"]] = json.loads(line)
REPOS = dict(targets3())

with open(HERE / "found.jsonl", "a") as out:
    for line in sys.stdin:
        if not line.strip():
            continue
        given = json.loads(line)
        alias = given["alias"]
        q3a, q3b = queries(REPOS[alias])
        earlier = LAST[alias]["queries"]
        if given.get("not_queried"):
            rec = {"alias": alias, "repo_id": REPOS[alias], "queries": earlier, "hf": None, "hf_source": None,
                   "file": None, "split": False, "why": "query 3 not reached in the time", "query3": "not_queried"}
        else:
            rec = {"alias": alias, "repo_id": REPOS[alias],
                   "queries": earlier + [f"find_string: {q3a}"] + ([f"find_string: {q3b}"] if given.get("b") else []),
                   "hf": given["hf"], "hf_source": given.get("hf_source"), "file": given.get("file"),
                   "split": bool(given.get("split")), "why": given["why"], "evidence": "code", "code": given.get("code", [])}
            if given.get("quants_only"):   # the repo's whole GGUF listing, as the cited line states it (Amendment 3)
                rec["quants_only"] = given["quants_only"]
            if given.get("mmproj"):
                rec["mmproj"] = True
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
