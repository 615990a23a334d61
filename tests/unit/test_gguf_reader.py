import struct
import tracemalloc

import gguf
import pytest
from factories import write_llama_gguf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runlocal.errors import ModelFormatError, ModelNotFoundError
from runlocal.model import gguf as reader


def test_header_only_file_gives_exact_tensor_bytes(tmp_path):
    # a header-only file is exactly what a remote range read produces: it must be enough
    p = write_llama_gguf(tmp_path / "m.gguf", n_layers=2, hidden=256, kv_heads=2, vocab=1000)
    spec = reader.read_gguf(p)
    assert spec.architecture == "llama" and spec.n_layers == 2 and spec.vocab_size == 1000
    q8 = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0]
    embd = next(t for t in spec.tensors if t.name == "token_embd.weight")
    assert embd.shape == (1000, 256) and embd.nbytes == 1000 * 256 // q8[0] * q8[1]
    assert spec.layers[0].attention.n_kv_heads == 2 and spec.layers[0].attention.k_dim == 32
    assert spec.file_quant == "Q8_0"


def test_roles_and_layers_from_names(tmp_path):
    spec = reader.read_gguf(write_llama_gguf(tmp_path / "m.gguf"))
    roles = {t.name: (t.role, t.layer) for t in spec.tensors}
    assert roles["blk.1.attn_output.weight"] == ("attn_o", 1)
    assert roles["blk.0.ffn_norm.weight"] == ("norm", 0)
    assert roles["output.weight"] == ("lm_head", None)


def test_truncated_before_tensor_infos_is_a_clear_error(tmp_path):
    p = write_llama_gguf(tmp_path / "m.gguf")
    data = p.read_bytes()
    header = reader.parse_header(data, "x")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: header.header_bytes - 40])   # ends inside the last tensor info
    with pytest.raises(ModelFormatError, match="truncated"):
        reader.read_gguf(cut)


def test_split_files_add_up(tmp_path):
    # any part names the whole set; tensors and bytes of all parts add up
    a = write_llama_gguf(tmp_path / "m-00001-of-00002.gguf", n_layers=2)
    write_llama_gguf(tmp_path / "m-00002-of-00002.gguf", n_layers=2)
    one = reader.read_gguf(write_llama_gguf(tmp_path / "single.gguf", n_layers=2))
    for part in (a, tmp_path / "m-00002-of-00002.gguf"):
        both = reader.read_gguf(part)
        assert len(both.tensors) == 2 * len(one.tensors)
        assert both.file_bytes == 2 * one.file_bytes


def test_split_with_missing_part(tmp_path):
    a = write_llama_gguf(tmp_path / "m-00001-of-00003.gguf")
    with pytest.raises(ModelNotFoundError, match="00002-of-00003"):
        reader.read_gguf(a)


def _prefix(n_tensors: int, n_kv: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv)


def test_absurd_tensor_count_refused_without_allocating():
    # 2^60 tensors: refuse before trying to read (or allocate for) them
    with pytest.raises(ModelFormatError, match="tensors"):
        reader.parse_header(_prefix(1 << 60, 0), "evil")


def test_absurd_string_length_refused():
    # a metadata key that claims 2^40 bytes must not be read into memory
    evil = _prefix(0, 1) + struct.pack("<Q", 1 << 40)
    tracemalloc.start()
    with pytest.raises(ModelFormatError, match="string"):
        reader.parse_header(evil, "evil")
    assert tracemalloc.get_traced_memory()[1] < 1 << 20
    tracemalloc.stop()


def test_absurd_array_length_refused():
    evil = _prefix(0, 1) + struct.pack("<Q", 3) + b"abc" + struct.pack("<IIQ", 9, 4, 1 << 50)
    with pytest.raises(ModelFormatError, match="items"):
        reader.parse_header(evil, "evil")


def test_not_gguf():
    with pytest.raises(ModelFormatError, match="not a GGUF"):
        reader.parse_header(b"PK\x03\x04" + b"\0" * 40, "zip")


def test_unsupported_version():
    with pytest.raises(ModelFormatError, match="version"):
        reader.parse_header(b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "old")


def test_incremental_read_grows_the_range(tmp_path):
    p = write_llama_gguf(tmp_path / "m.gguf", vocab=20000, tokens=20000)
    data = p.read_bytes()
    calls = []

    def read_at(off, n):
        calls.append((off, n))
        return data[off:off + n]

    header = reader.read_header_incrementally(read_at, "m", first=4096, size=len(data))
    assert len(header.tensors) > 0 and len(calls) > 1
    # every call asks for new bytes only: nothing is fetched twice
    assert all(calls[i + 1][0] == calls[i][0] + calls[i][1] for i in range(len(calls) - 1))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_fuzz_random_bytes_only_raise_format_errors(data):
    try:
        reader.parse_header(b"GGUF" + data, "fuzz")
    except (ModelFormatError, reader.NeedMoreData):
        pass


@pytest.fixture(scope="module")
def valid_header(tmp_path_factory):
    return write_llama_gguf(tmp_path_factory.mktemp("g") / "m.gguf", vocab=64, tokens=64).read_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_mutated_header_only_raises_format_errors(valid_header, data):
    # flip bytes of a real header: the parser either reads it or says why, never crashes or hangs
    buf = bytearray(valid_header)
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    try:
        reader.parse_header(bytes(buf), "fuzz")
    except (ModelFormatError, reader.NeedMoreData):
        pass
