"""Round 65's first step: the corpus's texts per repository (or per site, off GitHub), counted from the `source` field
of every *.jsonl under measurements/public_errors/ except next/. Reads only `source` (no text, label or note).
Run from the worktree: python3 measurements/public_errors/round65_count.py > measurements/public_errors/round65_count.txt
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
REPO = re.compile(r"github\.com/([\w.-]+/[\w.-]+)", re.I)
# renamed repositories counted as one (check_round.py's ALIASES)
ALIASES = {"oobabooga/text-generation-webui": "oobabooga/textgen", "ggerganov/llama.cpp": "ggml-org/llama.cpp",
           "jmorganca/ollama": "ollama/ollama", "turboderp/exllamav2": "turboderp-org/exllamav2",
           "turboderp/exllamav3": "turboderp-org/exllamav3", "go-skynet/localai": "mudler/localai"}


def where(source: str) -> str:
    m = REPO.search(source)
    if m:
        repo = m.group(1).lower()
        return ALIASES.get(repo, repo)
    if source.startswith("produced-here:"):
        return "produced-here"
    host = re.sub(r"^https?://", "", source.strip().lower()).split("/", 1)[0]
    return "page:" + host


def main() -> None:
    count: collections.Counter[str] = collections.Counter()
    files = [p for p in sorted(CORPUS.rglob("*.jsonl")) if "next" not in p.relative_to(CORPUS).parts]
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                count[where(json.loads(line)["source"])] += 1
    print(f"# {sum(count.values())} texts in {len(files)} files, {len(count)} repositories / sites")
    for name, n in sorted(count.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{n}\t{name}")


if __name__ == "__main__":
    main()
