"""Round 72's in-round duplicate test (its rule's test e): no two texts of next/round72_pages.jsonl share their longest
line (40 characters or more, whitespace and case folded, as check_round.longest_line), and — the stricter form round 70's
pair called for — no text's longest line stands inside another text of the round. check_round.py compares a round with
the corpus, not with itself; this compares the round with itself. Prints each clash and exits non-zero on any.
Run from the worktree: ``PYTHONPATH=$PWD/src python3 measurements/public_errors/round72_in_round.py``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_round import in_round_main  # noqa: E402

ROUND = Path(__file__).resolve().parent / "round72_pages.jsonl"

if __name__ == "__main__":
    sys.exit(in_round_main(ROUND))
