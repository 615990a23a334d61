"""The evidence behind runlocal's figures: the measured and publicly logged records and the scoring of the
planners against them. ``benchmarks/*.py`` print these scores and ``tests/`` assert them; both import this
package (no ``sys.path`` edits, no loading of scripts by file path).

Modules, one per body of evidence:

- ``public_logs``, ``public_errors``: loading and validating the records of ``measurements/public_logs`` and
  ``measurements/public_errors`` (stdlib only).
- ``llamacpp_runs``: the llama.cpp planner against our own llama.cpp runs (``measurements/llamacpp/data``);
  ``zero_gguf`` writes the zero-weight GGUFs those runs loaded (gguf and numpy only, so a bare GPU machine
  runs it as ``python -m runlocal.evidence.zero_gguf`` with ``src/`` on ``PYTHONPATH``).
- ``public_scores``: runlocal against the public llama.cpp and Ollama logs; ``vllm_logs``, ``sglang_logs``:
  the vLLM and SGLang planners against public start-up logs; ``transformers_peak``: the transformers planner
  against measured CUDA peaks.
- ``outcomes``: the posted outcomes of ``measurements/outcomes`` (ran / out of memory / refused), their schema and
  split, each record as a ``CheckRequest``, and how a verdict is scored against an outcome (stdlib only).
- ``speed_fit``: the speed model's dataset and its fit (``src/runlocal/data/speed_fit.json``); ``speed_report``:
  its error tables.

The records live in the checkout's ``measurements/`` folder (about 7 MB, not shipped in the wheel);
``RUNLOCAL_MEASUREMENTS`` points elsewhere. This module imports nothing but the standard library.
"""

from __future__ import annotations

import os
from pathlib import Path

MEASUREMENTS = Path(os.environ.get("RUNLOCAL_MEASUREMENTS") or Path(__file__).resolve().parents[3] / "measurements")
REPO = MEASUREMENTS.parent      # printed paths are relative to it ("measurements/public_logs/vllm.jsonl")

