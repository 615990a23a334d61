"""The catalog models with no GGUF repo recorded in data/ollama_tags.json (`hf`), one line each:
alias, catalog repo_id and the query RULE.md runs for it. Run before any query: python3 targets.py > targets.tsv"""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "src" / "runlocal" / "data"


def targets() -> list[tuple[str, str]]:
    models = json.loads((DATA / "models.json").read_text())["models"]
    tags = json.loads((DATA / "ollama_tags.json").read_text())["models"]
    return [(m["alias"], m["repo_id"]) for m in models if not tags.get(m["alias"], {}).get("hf")]


def query(repo_id: str) -> str:
    return f"{repo_id.split('/')[-1]} GGUF Q4_K_M"


if __name__ == "__main__":
    for alias, repo_id in targets():
        print(f"{alias}\t{repo_id}\t{query(repo_id)}")
