"""A Qwen3.5 / Qwen3-Next GGUF as runlocal reads it: which layers are gated delta-net (recurrent state, no KV cache)
and which are full attention, the MTP block left out, and its compute buffer traced rather than fitted.

The files are the zero-weight GGUFs the converter would write for the catalog configs shrunk to one layer period
(runlocal.evidence.converter_meta; sparse, no disk); llama.cpp's own reading of them (load_arch_hparams: layer il is
recurrent unless (il + 1) % full_attention_interval == 0; n_layer = block_count − nextn_predict_layers) is checked
on the real library in tests/accuracy/test_llamacpp_catalog_real.py and test_ggml_qwen35_real.py.
"""

from __future__ import annotations

import pytest

from runlocal.model.gguf import read_gguf
from runlocal.runtimes.ggml import supported

gguf = pytest.importorskip("gguf", reason="gguf-py is not installed")


def write(alias: str, path, **extra_kv):
    from runlocal.evidence.converter_meta import converter_kv, converter_shape, shrunk_config
    from runlocal.evidence.zero_gguf import write_zero_gguf
    from runlocal.model.catalog import find_entry, lookup
    from runlocal.model.hf_config import spec_from_config
    from runlocal.quant.gguf_mix import gguf_arch, gguf_view

    arch = gguf_arch(lookup(alias))
    config = shrunk_config(find_entry(alias)["config"], arch)
    view = gguf_view(spec_from_config(config, id=alias, source="test"), "F16")
    tensors = [(t.name, list(reversed(converter_shape(t.name, t.shape, arch))), gguf.GGMLQuantizationType[t.dtype])
               for t in view.tensors]
    kv = converter_kv(config, arch, 4096) | {k.replace("ARCH", arch): v for k, v in extra_kv.items()}
    out = path / f"{alias}.gguf"
    write_zero_gguf(out, arch, kv, tensors)
    return out


@pytest.mark.parametrize("alias", ["qwen3.6-35b-a3b", "qwen3.5-27b", "qwen3-next-80b-a3b"])
def test_three_delta_net_layers_then_one_attention_layer(alias, tmp_path):
    spec = read_gguf(write(alias, tmp_path))
    assert [la.attention is None for la in spec.layers] == [True, True, True, False]
    assert all(la.recurrent is not None and la.recurrent.kind == "gated_deltanet" for la in spec.layers[:3])
    assert supported(spec)          # its compute buffer is the traced graph's, not the fitted phases'


def test_the_interval_key_decides_the_pattern(tmp_path):
    spec = read_gguf(write("qwen3.5-27b", tmp_path, **{"ARCH.full_attention_interval": 2}))
    assert [la.attention is None for la in spec.layers] == [True, False, True, False]


def test_the_mtp_block_is_loaded_but_gets_no_cache(tmp_path):
    """Qwen3.5's converter appends the multi-token-prediction block (block_count + 1, nextn_predict_layers 1): llama.cpp
    runs n_layer = 4 layers; the fifth block is not a KV layer. Its tensors still count as weights."""
    spec = read_gguf(write("qwen3.5-27b", tmp_path, **{"ARCH.block_count": 5, "ARCH.nextn_predict_layers": 1}))
    assert spec.n_layers == 4 and len(spec.attention_layers) == 1


def test_a_file_without_an_attention_layer_is_not_traced(tmp_path):
    """An interval past the layer count leaves no full-attention layer: the builders need one (the KV inputs), so the
    fitted phases size it."""
    spec = read_gguf(write("qwen3.5-27b", tmp_path, **{"ARCH.full_attention_interval": 8}))
    assert all(la.attention is None for la in spec.layers)
    assert not supported(spec)
