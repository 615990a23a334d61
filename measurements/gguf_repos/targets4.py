"""Query 4's targets (RULE.md Amendment 5), in found.jsonl order: the aliases still without hf whose last found.jsonl
line has hf null and no `dropped`; then the two records Amendment 4b marked DOUBTFUL. Prints alias, repo_id, query 4a
(find_string), 4b (search code), 4c (search docs)."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TAGS = HERE.parents[1] / "src" / "runlocal" / "data" / "ollama_tags.json"
DOUBTFUL = ("falcon-7b-instruct", "falcon-40b-instruct")


def queries(repo_id: str) -> tuple[str, str, str]:
    base = repo_id.split("/")[-1]
    return f"{base}-GGUF"[:50], f"{base} GGUF Q4_K_M", f"{repo_id} GGUF"


def last_lines() -> dict[str, dict]:
    last: dict[str, dict] = {}
    for line in (HERE / "found.jsonl").read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            last[rec["alias"]] = rec
    return last


def targets4() -> list[tuple[str, str]]:
    tags = json.loads(TAGS.read_text())["models"]
    last = last_lines()
    todo = [(a, r["repo_id"]) for a, r in last.items()
            if r["hf"] is None and not r.get("dropped") and not tags.get(a, {}).get("hf")]
    return todo + [(a, last[a]["repo_id"]) for a in DOUBTFUL]


if __name__ == "__main__":
    for alias, repo_id in targets4():
        print(alias, repo_id, *queries(repo_id), sep="\t")
