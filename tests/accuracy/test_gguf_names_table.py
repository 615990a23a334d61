"""The shipped GGUF names of the catalog models (data/gguf_catalog_names.json) are what gguf-py gives today."""

import json
from importlib import resources

from runlocal.model import catalog
from runlocal.quant import gguf_convert, gguf_mix, gguf_names_table


def test_regenerated_table_equals_the_shipped_one():
    shipped = json.loads(resources.files("runlocal.data").joinpath(gguf_names_table.TABLE).read_text())
    # conversions kept from plans earlier in the process (the suite's order under xdist put one before this test):
    # build() must still see every name, not a kept answer that never asked its recorder
    for alias in ("granite-4.0-h-tiny", "qwen3-30b-a3b"):
        gguf_convert.gguf_tensors(catalog.lookup(alias))
    built = gguf_names_table.build()
    assert built["models"] == shipped["models"]
    assert built["names"] == shipped["names"]


def test_catalog_gguf_names_from_the_table_equal_gguf_py():
    for alias in ("llama-3.1-8b", "deepseek-v3", "gemma-3-27b", "qwen3-30b-a3b", "granite-4.0-h-tiny"):
        spec = catalog.lookup(alias)
        arch = gguf_mix.gguf_arch(spec)
        assert isinstance(gguf_convert._name_map(spec, arch), gguf_names_table.ShippedNameMap)
        real = gguf_convert._gguf_name_map(arch, spec.n_layers)
        table = gguf_convert._name_map(spec, arch)
        for t in spec.tensors:
            base = gguf_convert._normalize_hf_name(t.name).rsplit(".", 1)[0]
            if gguf_names_table.template(base)[0] in table.names:
                assert table.get_name(base) == real.get_name(base), base


def test_an_edited_catalog_model_uses_gguf_py():
    from dataclasses import replace

    spec = catalog.lookup("llama-3.1-8b")
    edited = replace(spec, tensors=spec.tensors[:-1])      # a tensor fewer than the shipped entry
    assert gguf_names_table.catalog_name_map(edited, "llama") is None


def test_every_catalog_model_is_named_from_the_table_without_gguf_py():
    """A catalog check must not import gguf-py: every catalog model the converter knows is answered by the shipped
    table under the architecture gguf_arch gives (nemotron-3-nano, a MoE Nemotron-H, was filed under the dense arch
    and so fell back to gguf-py and numpy on every check)."""
    missed = []
    for alias in catalog.aliases():
        spec = catalog.lookup(alias)
        arch = gguf_mix.gguf_arch(spec)
        if arch and spec.tensors and gguf_names_table.catalog_name_map(spec, arch) is None:
            missed.append((alias, arch))
    assert not missed
