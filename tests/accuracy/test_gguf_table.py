"""The tabulated catalog GGUF weights (quant/gguf_table.py) must equal gguf_mix's computation."""

from __future__ import annotations

import pytest

from runlocal.model import catalog
from runlocal.model.spec import ModelSpec
from runlocal.quant import gguf_mix, gguf_table


def test_ftype_names_match_gguf_py():
    assert gguf_table.supported_ftypes() == gguf_mix.SUPPORTED_FTYPES


@pytest.mark.parametrize("alias", catalog.aliases())
def test_every_tabulated_entry_equals_the_live_computation(alias):
    spec = catalog.lookup(alias)
    for ftype in gguf_mix.SUPPORTED_FTYPES:
        assert gguf_table.catalog_weights(spec, ftype) == gguf_mix.weight_bytes_by_type(spec, ftype), ftype


def test_models_not_from_the_catalog_are_not_looked_up():
    spec = catalog.lookup("llama-3.1-8b")
    edited = ModelSpec(**{**spec.__dict__, "source": "/tmp/config.json"})
    assert gguf_table.catalog_weights(edited, "Q4_K_M") is None
