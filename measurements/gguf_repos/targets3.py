"""Query 3's targets (RULE.md Amendment 4), in its order: the aliases still without hf whose last found.jsonl line
has hf null and no `dropped`, tier 1 (the families review22 names), tier 2 (other 2025-2026 families), then the rest;
within a tier, found.jsonl order. Prints alias, repo_id, query 3a, query 3b."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TAGS = HERE.parents[1] / "src" / "runlocal" / "data" / "ollama_tags.json"
TIER1 = ("qwen3.5-", "qwen3.6-", "gemma-4-", "glm-4.5-air", "qwen3-coder-30b-a3b")
TIER2 = ("qwen3", "glm-4.", "minimax-m2", "llama-4-", "deepseek-v3", "kimi-k2", "devstral", "phi-4", "olmo-3",
         "nemotron", "falcon-h1", "typhoon2.5", "tongyi", "baichuan-m2", "deepseek-r1-0528", "xlam-2", "granite-3.3",
         "dolphin-mistral-24b")


def queries(repo_id: str) -> tuple[str, str]:
    base = repo_id.split("/")[-1]
    return f"{base}-GGUF:Q4_K_M"[:50], f"{base}-Q4_K_M"[:50]


def targets3() -> list[tuple[str, str]]:
    tags = json.loads(TAGS.read_text())["models"]
    last: dict[str, dict] = {}
    for line in (HERE / "found.jsonl").read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            last[rec["alias"]] = rec
    todo = [(a, r["repo_id"]) for a, r in last.items()
            if r["hf"] is None and not r.get("dropped") and not tags.get(a, {}).get("hf")]

    def tier(alias: str) -> int:
        return 0 if alias.startswith(TIER1) or alias == "glm-4.5-air" else 1 if alias.startswith(TIER2) else 2
    return sorted(todo, key=lambda t: tier(t[0]))  # stable: found.jsonl order within a tier


if __name__ == "__main__":
    for alias, repo_id in targets3():
        print(alias, repo_id, *queries(repo_id), sep="\t")
