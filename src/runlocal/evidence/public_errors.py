"""Load the public error corpus (measurements/public_errors/*.jsonl) and split it, stdlib only.

Every record is one error text posted in a public issue or pull-request thread, copied as posted (only the
error lines, not the prose around them): ``id``, ``source`` (the thread's URL), ``project`` (owner/name),
``runtime`` and ``version`` as the thread states them, ``text``, ``label`` (the failure category it shows,
one of runlocal.diagnose.kb.CATEGORIES), ``family`` (a finer name for the kind of failure, for the per-family
report) and ``memory`` (whether the failure is a lack of memory, False for look-alikes).

The held-out fifth is fixed by the record id alone (``held_out``): it was chosen before the classifier was
tuned on this corpus and is never looked at while tuning (benchmarks/diagnose_accuracy.py prints its failures
only with ``--show-held-out``).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from . import MEASUREMENTS

HERE = MEASUREMENTS / "public_errors"
FIELDS = ("id", "source", "project", "runtime", "version", "text", "label", "family", "memory")
URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+$")


def held_out(record_id: str) -> bool:
    """One record in five, by the first byte of the SHA-256 of its id (independent of order and of the text)."""
    return hashlib.sha256(record_id.encode("utf-8")).digest()[0] % 5 == 0


def _check(rec: dict, where: str) -> dict:
    missing = [f for f in FIELDS if f not in rec]
    if missing:
        raise ValueError(f"{where}: missing {missing}")
    if not URL.match(rec["source"]):
        raise ValueError(f"{where}: source is not a GitHub issue/PR URL: {rec['source']}")
    if not rec["text"].strip():
        raise ValueError(f"{where}: empty text")
    if rec["memory"] != (rec["label"] != "not_memory"):
        raise ValueError(f"{where}: memory flag disagrees with label {rec['label']}")
    return rec


def load_records(directory: Path = HERE) -> list[dict]:
    records, seen = [], set()
    for path in sorted(directory.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            rec = _check(json.loads(line), f"{path.name}:{n}")
            if rec["id"] in seen:
                raise ValueError(f"{path.name}:{n}: duplicate id {rec['id']}")
            seen.add(rec["id"])
            records.append(rec)
    return records


def split(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """(tuning, held-out)."""
    return [r for r in records if not held_out(r["id"])], [r for r in records if held_out(r["id"])]


if __name__ == "__main__":
    recs = load_records()
    tune, hold = split(recs)
    print(f"{len(recs)} records from {len({r['project'] for r in recs})} projects; "
          f"tuning {len(tune)}, held-out {len(hold)}")
