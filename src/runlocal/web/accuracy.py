"""The accuracy tables on the Methodology page: what the benchmarks printed, saved by
benchmarks/site_tables.py into web/data/accuracy.json (shipped with the package, so an installed server
shows them without the repository's measurements)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

# What the page shows, in order: (title, script, first line kept (a prefix, None: the last lines), last line kept
# (a prefix) or None for the end). benchmarks/site_tables.py runs each script and keeps that block of its output.
BENCHMARKS: tuple[tuple[str, str, str | None, str | None], ...] = (
    ("llama.cpp: predicted buffers against real llama.cpp contexts", "benchmarks/accuracy.py",
     "== summary (for the README) ==", "refusals:"),
    ("vLLM: predicted KV pool against public start-up logs", "benchmarks/accuracy_vllm.py", "median |error|", None),
    ("transformers: predicted peak memory against H100 generate runs", "benchmarks/accuracy_transformers.py", None, None),
    ("Speed model: decode and prefill against llama-bench records", "benchmarks/speed_accuracy.py", "device class",
     None),
)


def kept(text: str, first: str | None, last: str | None, max_lines: int = 40) -> str:
    """The block of a benchmark's output the page shows: from the line starting with ``first`` (else the last
    ``max_lines`` lines) to the line starting with ``last`` (else the end), at most ``max_lines`` lines."""
    lines = text.rstrip().splitlines()
    start = next((i for i, line in enumerate(lines) if first and line.startswith(first)), None)
    if start is None:
        start = max(0, len(lines) - max_lines)
    end = next((i for i in range(start, len(lines)) if last and lines[i].startswith(last)), len(lines) - 1)
    return "\n".join(lines[start:end + 1][:max_lines])


@lru_cache(maxsize=1)
def saved_tables() -> dict[str, Any] | None:
    path = resources.files("runlocal.web").joinpath("data/accuracy.json")
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))
