"""Round 71's in-round duplicate test (its rule's test e): no two texts of round71_pages.jsonl (collected in next/; tuning data since diagnose22) share their longest
line (40 characters or more, whitespace and case folded, as check_round.longest_line), and — the stricter form round 70's
pair called for — no text's longest line stands inside another text of the round. check_round.py compares a round with
the corpus, not with itself; this compares the round with itself. Prints each clash and exits non-zero on any.
Run from the worktree: ``PYTHONPATH=$PWD/src python3 measurements/public_errors/round71_in_round.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_round import longest_line, norm  # noqa: E402

ROUND = Path(__file__).resolve().parent / "round71_pages.jsonl"


def clashes(records: list[dict]) -> list[str]:
    out = []
    for a in records:
        top = longest_line(a["text"])
        if len(top) < 40:
            continue
        for b in records:
            if b is not a and (top == longest_line(b["text"]) or top in norm(b["text"])):
                out.append(f"{a['id']}: longest line also in {b['id']}: {top[:80]!r}")
    return out


def main() -> int:
    records = [json.loads(x) for x in ROUND.read_text(encoding="utf-8").splitlines() if x.strip()]
    found = clashes(records)
    print("\n".join(found) or f"{len(records)} records, no two share a longest line, none inside another text")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
