"""Hybrid (recurrent) models' llama-bench rows scored against the speed model (issue #18, "hybrid prefill").

Two files, split by the rule committed before any record was read (measurements/speed/held_out/hybrid_queries.md):
``measurements/speed/hybrid_2026.jsonl`` (tuning; ``fit_scope: "recurrent"``, so speed_fit.load_records leaves it out
of every other fit) and ``measurements/speed/held_out/hybrid.jsonl`` (held out, never fitted; speed_fit.load_held_out
leaves it out of round 1's tables). Each is printed on its own: every record, then |error| per backend, per
recurrent kind and graph path (``recurrent`` / ``gdn_path`` in the record) and per source. The held-out part was
scored once when the recurrent terms were committed: held_out/hybrid_first_run.txt.
"""

from __future__ import annotations

import json

from .speed_fit import DATA, HELD_OUT, build_rows
from .speed_report import backend_errors, group_errors, print_group_table

TUNING_FILE = DATA / "hybrid_2026.jsonl"
HELD_OUT_FILE = HELD_OUT / "hybrid.jsonl"


def load_hybrid(held_out: bool) -> list[dict]:
    """The tuning records (``held_out`` False) or the held-out ones, outliers left out."""
    path = HELD_OUT_FILE if held_out else TUNING_FILE
    if not path.exists():
        return []
    name = f"held_out/{path.name}" if held_out else path.name
    recs = [{**json.loads(line), "_file": name} for line in path.read_text().splitlines() if line.strip()]
    return [r for r in recs if not r.get("outlier")]


def _path(row) -> str:
    """The recurrent op a record's model runs and, for a gated delta net, the graph its build plans."""
    kind = row.rec.get("recurrent", "?")
    return f"{kind}/{row.rec['gdn_path']}" if row.rec.get("gdn_path") else kind


def report_hybrid(consts, split_ms: float, *, quiet: bool) -> None:
    for held, title in ((False, "tuning part, measurements/speed/hybrid_2026.jsonl"),
                        (True, "held-out part, measurements/speed/held_out/hybrid.jsonl, never fitted")):
        rows = build_rows(load_hybrid(held))
        if not rows:
            continue
        print(f"\nHybrid (recurrent) models, {title} ({len(rows)} records, rule: held_out/hybrid_queries.md):")
        backend_errors(rows, consts, split_ms, quiet=quiet, label="  ")
        label = "held out" if held else "tuning"
        print_group_table(f"  hybrid {label}, per backend", "backend",
                          group_errors(rows, consts, split_ms, lambda r: r.backend))
        print_group_table(f"  hybrid {label}, per recurrent op / graph path", "op/path",
                          group_errors(rows, consts, split_ms, _path))
        print_group_table(f"  hybrid {label}, per source", "source",
                          group_errors(rows, consts, split_ms, lambda r: "/".join(r.rec["source_url"].split("/")[3:7])))
