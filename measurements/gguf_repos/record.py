"""Append query results to found.jsonl: stdin lines `alias|hf|hf_source|file|split|why|q2[|quants_only]` (hf '-' for
none; q2 'y' when query 2 was run too, 'nq' for a target query 2 did not reach: RULE.md Amendment 3; quants_only a
comma-separated list of the quant tags the evidence page shows as the repo's whole GGUF listing, '-' or absent when it
does not show it whole). The queries come from targets.py, so the log names exactly what was asked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from targets import query, targets

HERE = Path(__file__).resolve().parent
REPOS = dict(targets())

with open(HERE / "found.jsonl", "a") as out:
    for line in sys.stdin:
        if not line.strip():
            continue
        alias, hf, src, file, split, why, q2, *rest = (part.strip() for part in line.split("|"))
        base = REPOS[alias].split("/")[-1]
        queries = [query(REPOS[alias])] + ([f"bartowski {base}-GGUF Q4_K_M"] if q2 == "y" else [])
        rec = {"alias": alias, "repo_id": REPOS[alias], "queries": queries,
               "hf": None if hf == "-" else hf, "hf_source": None if src == "-" else src,
               "file": None if file == "-" else file, "split": split == "y", "why": why}
        if q2 == "nq":
            rec["query2"] = "not_queried"
        if rest and rest[0] not in ("", "-"):
            rec["quants_only"] = rest[0].split(",")
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
