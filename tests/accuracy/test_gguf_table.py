"""The tabulated catalog GGUF weights (quant/gguf_table.py) must equal gguf_mix's computation."""

from __future__ import annotations

import json
from functools import cache

import pytest

from runlocal.model import catalog
from runlocal.model.spec import ModelSpec
from runlocal.quant import gguf_mix, gguf_table


def test_ftype_names_match_gguf_py():
    assert gguf_table.supported_ftypes() == gguf_mix.SUPPORTED_FTYPES


@cache
def _live(config_json: str, alias: str) -> tuple:
    """gguf_mix's bytes per type for every ftype, computed once per distinct config (catalog siblings such as the
    Thinking / Base / deduplicated releases share one config, so one computation answers for all of them)."""
    spec = catalog.lookup(alias)
    return tuple(gguf_mix.weight_bytes_by_type(spec, ftype) for ftype in gguf_mix.SUPPORTED_FTYPES)


@pytest.mark.parametrize("alias", catalog.aliases())
def test_every_tabulated_entry_equals_the_live_computation(alias):
    spec = catalog.lookup(alias)
    entry = catalog.find_entry(alias)
    first = next(a for a in catalog.aliases()
                 if catalog.find_entry(a)["config"] == entry["config"])   # the first alias with this config
    live = _live(json.dumps(entry["config"], sort_keys=True), first)
    for ftype, expected in zip(gguf_mix.SUPPORTED_FTYPES, live, strict=True):
        assert gguf_table.catalog_weights(spec, ftype) == expected, ftype


def test_models_not_from_the_catalog_are_not_looked_up():
    spec = catalog.lookup("llama-3.1-8b")
    edited = ModelSpec(**{**spec.__dict__, "source": "/tmp/config.json"})
    assert gguf_table.catalog_weights(edited, "Q4_K_M") is None
