"""Round 74's fixtures: round 63's ``harness.py`` and round 73's ``harness73.py`` re-exported (imported, not copied)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "round73_make"))
from harness73 import ENVSETUP, big_gguf, tiny_gguf, tiny_hf  # noqa: E402,F401
