"""Round 73's in-round duplicate test (round 72's test e, applied to texts produced here): the round compared with
itself, in two forms.

1. check_round.in_round_clashes as rounds 71-72 ran it: a text whose longest line (40 characters or more) is another
   text's longest line or stands inside another text. Printed, not failed on: round 73's texts are produced by the same
   installed libraries, so a library's frame line or log line recurs in texts of different failures (check_round's
   paste_line says the same of the corpus test since round 63; this form, run on round62.jsonl and round63.jsonl,
   prints 35 and 13 such lines).
2. The produced-text form (check_round.paste_line(text, produced=True), the corpus test's form for produced texts): a
   text found whole inside another text of the round. Any such clash exits non-zero.

Tuning data since diagnose23 (session 23), which moved it and round73_pages.jsonl out of held_out/.
Run from the worktree: ``PYTHONPATH=$PWD/src python3 measurements/public_errors/round73_in_round.py``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_round import produced_round_main  # noqa: E402

ROUND = Path(__file__).resolve().parent / "round73_pages.jsonl"

if __name__ == "__main__":
    sys.exit(produced_round_main(ROUND))
