"""The accuracy tables on the Methodology page: what the benchmarks printed, saved by
benchmarks/site_tables.py into web/data/accuracy.json (shipped with the package, so an installed server
shows them without the repository's measurements)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=1)
def saved_tables() -> dict[str, Any] | None:
    path = resources.files("runlocal.web").joinpath("data/accuracy.json")
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))
