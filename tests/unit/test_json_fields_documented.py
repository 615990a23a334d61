"""review22 #13: every field of check's JSON (the schema api/schemas.py describes: PlanDoc and the documents it nests)
is named in docs/check-reference.md, the page the README sends readers to for output fields — speed's
prefill_not_predicted and prefill_range_tokens_per_s were in docs/benchmarks.md only."""

from __future__ import annotations

import re
from pathlib import Path

from runlocal.api import schemas

DOC = (Path(__file__).resolve().parents[2] / "docs" / "check-reference.md").read_text()


def test_every_check_json_field_is_named_in_check_reference():
    named = set(re.findall(r"`([a-z_][a-z0-9_]*)(?:\[\])?`", DOC))
    missing = {cls.__name__: sorted(set(cls.model_fields) - named)
               for cls in (schemas.PlanDoc, schemas.SpeedDoc, schemas.MemoryDoc, schemas.DeviceMemoryDoc,
                           schemas.FixDoc, schemas.StepDoc, schemas.KVCountsDoc, schemas.RequestsAtOnceDoc)}
    assert not any(missing.values()), missing
