"""Writes each record's `posted`, `posted_from` and `runtime_version_inferred` into records.jsonl and held_out.jsonl
(README "Post dates and the era's release"), from posted_dates.tsv (the look-ups, one row per source address) and
release_dates.json (make_release_dates.py).

    python measurements/outcomes/date_records.py

A record takes the row keyed by its `id` (batch 7: a comment's own date where the tool gave the comment no anchor), else
the row of its `source` address, else of its `thread_url`; without a row with a date, a full date its
own evidence states (YYYY-MM-DD or YYYY/MM/DD: a dated table row, a log's timestamp) is the run's date
(`posted_from: evidence`); else "unknown". Only these three fields are written; every other field is left as it is.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from runlocal.evidence import outcomes

HERE = Path(__file__).resolve().parent
EVIDENCE_DATE = re.compile(r"\b(20[12][0-9])[-/]([01][0-9])[-/]([0-3][0-9])\b")


def looked_up() -> dict[str, tuple[str, str]]:
    with open(HERE / "posted_dates.tsv", newline="") as f:
        return {row["source"]: (row["posted"], row["posted_from"]) for row in csv.DictReader(f, delimiter="\t")}


def date_of(rec: dict, rows: dict[str, tuple[str, str]]) -> tuple[str, str]:
    for key in (rec["id"], rec["source"], rec["thread_url"]):
        if key in rows and rows[key][0] != "unknown":
            return rows[key]
    m = EVIDENCE_DATE.search(rec["evidence"])
    return (f"{m.group(1)}-{m.group(2)}-{m.group(3)}", "evidence") if m else ("unknown", "none")


def main() -> None:
    rows, table = looked_up(), outcomes.release_dates()
    for name in ("records.jsonl", "held_out.jsonl"):
        path = HERE / name
        out = []
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            rec["posted"], rec["posted_from"] = date_of(rec, rows)
            rec["runtime_version_inferred"] = None
            rec["runtime_version_inferred"] = outcomes.era_release(rec, table)
            outcomes.validate(rec)
            out.append(json.dumps(rec, ensure_ascii=False))
        path.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
