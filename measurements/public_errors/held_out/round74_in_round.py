"""Round 74's in-round duplicate test (round 73's round73_in_round.py pointed at round74_pages.jsonl;
round 72's test e, applied to texts produced here): the round compared with itself, in two forms.

1. check_round.in_round_clashes as rounds 71-72 ran it: a text whose longest line (40 characters or more) is another
   text's longest line or stands inside another text. Printed, not failed on: round 74's texts, like round 73's, are produced by the
   same installed libraries, so a library's frame line or log line recurs in texts of different failures (check_round's
   paste_line says the same of the corpus test since round 63; this form, run on round62.jsonl and round63.jsonl,
   prints 35 and 13 such lines).
2. The produced-text form (check_round.paste_line(text, produced=True), the corpus test's form for produced texts): a
   text found whole inside another text of the round. Any such clash exits non-zero.

Run from the worktree: ``PYTHONPATH=$PWD/src python3 measurements/public_errors/next/round74_in_round.py`` (it moves
with the round file; when moved, ROUND below is the file beside it)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from check_round import produced_round_main  # noqa: E402

ROUND = Path(__file__).resolve().parent / "round74_pages.jsonl"

if __name__ == "__main__":
    sys.exit(produced_round_main(ROUND))
