"""A sample of the shipped sweep table (data/sweep_lines.json) against the planners, in the quick loop: a planner
change that moves a catalog model's memory line shows here before the whole table's test
(tests/accuracy/test_sweep_table.py) runs. Regenerate with `python -m runlocal.sweep`."""

from __future__ import annotations

import pytest

from runlocal import sweep
from runlocal.model import catalog


@pytest.mark.parametrize("runtime", sweep.TABLE_RUNTIMES)
def test_lines_read_from_the_table_are_the_lines_planned_now(runtime):
    assert sweep._table() is not None, "data/sweep_lines.json is stale or missing: run python -m runlocal.sweep"
    for alias in ("llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-27b", "nemotron-h-56b"):    # dense, MoE, SWA, hybrid
        spec = catalog.lookup(alias)
        lines, limit = sweep._model_lines(alias, runtime)
        assert lines == tuple(sweep.affine_memory(spec, q, runtime) for q in sweep.SWEEP_QUANTS), (alias, runtime)
        assert limit == (spec.max_position_embeddings or 131072)
