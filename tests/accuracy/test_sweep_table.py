"""The shipped sweep table (data/sweep_lines.json, `python -m runlocal.sweep`) must equal what the planners give
now, and the answers read from it must be the answers planned without it."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from runlocal import sweep
from runlocal.model import catalog


def _shipped() -> dict:
    return json.loads(resources.files("runlocal.data").joinpath(sweep.TABLE).read_text(encoding="utf-8"))


def test_the_table_was_built_from_this_catalog_and_ladder():
    doc = _shipped()
    assert doc["catalog_sha256"] == sweep._catalog_digest(), "catalog changed: run python -m runlocal.sweep"
    assert doc["quants"] == list(sweep.SWEEP_QUANTS) and doc["probe_ctx"] == list(sweep._PROBE_CTX)
    assert sweep._table() is not None


@pytest.mark.parametrize("runtime", sweep.TABLE_RUNTIMES)
def test_every_tabulated_total_is_what_the_planner_gives_now(runtime):
    doc = _shipped()
    models = {alias: (lim, weights) for alias, lim, weights in doc["models"]}
    shipped = doc["runtimes"][runtime]
    live = {}
    for alias in catalog.aliases():
        spec = catalog.lookup(alias)
        try:
            made = [sweep._probe_totals(spec, q, runtime) for q in sweep.SWEEP_QUANTS]
        except Exception:  # the sweep leaves such a model out; so must the table
            continue
        live[alias] = made
        lim, weights = models[alias]
        assert lim == (spec.max_position_embeddings or 131072), alias
        assert weights == [w for _, _, w in made], alias
        assert shipped[alias] == [t for t0, t1, _ in made for t in (t0, t1)], (alias, runtime)
    assert list(shipped) == list(live), "models in the table differ from those the planner sizes"


def test_an_edited_catalog_is_planned_not_read_from_the_table(monkeypatch):
    monkeypatch.setattr(sweep, "_catalog_digest", lambda: "another catalog")
    sweep._table.cache_clear()
    try:
        assert sweep._table() is None
    finally:
        monkeypatch.undo()
        sweep._table.cache_clear()
    assert sweep._table() is not None


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama", "vllm"])
def test_compares_largest_model_is_the_first_that_models_fits_lists(runtime):
    # `runlocal compare`'s "largest catalog model" column for 8 GB … 192 GB at 2K … 128K equals the first row of
    # `runlocal models --fits` for that capacity and context (the column visits the largest models only)
    sweep._built.discard(runtime)
    for gib in (6, 8, 12, 16, 24, 32, 48, 64, 80, 96, 128, 192):
        for ctx in (2048, 8192, 32768, 131072):
            lazy = sweep.largest_model_that_fits(gib << 30, ctx, runtime)
            rows = sweep.models_that_fit(gib << 30, ctx, runtime)
            sweep._built.discard(runtime)
            assert lazy == (rows[0] if rows else None), (gib, ctx)
