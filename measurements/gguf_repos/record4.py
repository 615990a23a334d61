"""Append query 4 records to found.jsonl (RULE.md Amendment 5): stdin holds one JSON object a line with `alias`, `hf`
(or null), `why`, and where a repo was found `hf_source` (the huggingface.co URL a line names, or null), `file`,
`split`; `sources` (the evidence naming the repo with its Q4_K_M: kind, ref, line), `named` (repos named without a
usable Q4_K_M), `b` / `c` ("run" when query 4b / 4c was sent, Amendment 5a). The queries logged come from targets4.py,
so the log names exactly what was asked; a DOUBTFUL record re-checked to no repo is marked `withdrawn` (apply.py then
takes hf off its entry)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from targets4 import DOUBTFUL, last_lines, queries

HERE = Path(__file__).resolve().parent
LAST = last_lines()
# the targets as listed before any query 4 (targets4.tsv, committed with Amendment 5): once a repo is applied,
# targets4() no longer lists its alias
REPOS = dict(line.split("\t")[:2] for line in (HERE / "targets4.tsv").read_text().splitlines())

with open(HERE / "found.jsonl", "a") as out:
    for line in sys.stdin:
        if not line.strip():
            continue
        given = json.loads(line)
        alias = given["alias"]
        q4a, q4b, q4c = queries(REPOS[alias])
        asked = ([f"find_string: {q4a}"] + ([f"search code: {q4b}"] if given.get("b") == "run" else [])
                 + ([f"search docs: {q4c}"] if given.get("c") == "run" else []))
        rec = {"alias": alias, "repo_id": REPOS[alias], "queries": LAST[alias]["queries"] + asked,
               "hf": given["hf"], "hf_source": given.get("hf_source"), "file": given.get("file"),
               "split": bool(given.get("split")), "why": given["why"], "evidence": "named",
               "sources": given.get("sources", []), "named": given.get("named", [])}
        if alias in DOUBTFUL and given["hf"] is None and LAST[alias]["hf"]:
            rec["withdrawn"] = LAST[alias]["hf"]
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
