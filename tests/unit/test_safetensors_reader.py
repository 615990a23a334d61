import json
import struct

import pytest
from factories import safetensors_bytes
from hypothesis import given, settings
from hypothesis import strategies as st

from runlocal.errors import ModelFormatError
from runlocal.model import safetensors as st_reader


def _parse(blob: bytes):
    n = st_reader.header_length(blob[:8], "x")
    return st_reader.parse_header(blob[8:8 + n], "x")


def test_dtypes_shapes_bytes_and_roles():
    blob = safetensors_bytes({
        "model.layers.3.self_attn.k_proj.weight": ("BF16", [256, 1024]),
        "model.layers.3.input_layernorm.weight": ("F32", [1024]),
        "lm_head.weight": ("F16", [500, 1024]),
    }, {"format": "pt"})
    tensors, meta = _parse(blob)
    by = {t.name: t for t in tensors}
    assert meta == {"format": "pt"}
    assert by["model.layers.3.self_attn.k_proj.weight"].nbytes == 256 * 1024 * 2
    k_proj = by["model.layers.3.self_attn.k_proj.weight"]
    assert (k_proj.role, k_proj.layer) == ("attn_k", 3)
    assert by["model.layers.3.input_layernorm.weight"].role == "norm"
    assert by["lm_head.weight"].role == "lm_head"


@pytest.mark.parametrize("header, match", [
    ({"w": {"dtype": "Q9", "shape": [2], "data_offsets": [0, 2]}}, "dtype"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, "bytes"),       # size disagrees with shape
    ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, "shape"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}}, "data_offsets"),
    ({"w": [1, 2]}, "not an object"),
])
def test_malformed_entries_named(header, match):
    raw = json.dumps(header).encode()
    with pytest.raises(ModelFormatError, match=match):
        st_reader.parse_header(raw, "x")


def test_header_length_bounds():
    # a 2^40-byte header claim is refused before anything is read
    with pytest.raises(ModelFormatError, match="out of range"):
        st_reader.header_length(struct.pack("<Q", 1 << 40), "x")


def test_truncated_local_file(tmp_path):
    blob = safetensors_bytes({"a.weight": ("F16", [4, 4])})
    p = tmp_path / "m.safetensors"
    p.write_bytes(blob[:20])
    with pytest.raises(ModelFormatError, match="ends inside"):
        st_reader.read_local(p)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_header_bytes(data):
    try:
        st_reader.parse_header(data, "fuzz")
    except ModelFormatError:
        pass


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                           max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_fuzz_structured_json(doc):
    try:
        st_reader.parse_header(json.dumps(doc).encode(), "fuzz")
    except ModelFormatError:
        pass
