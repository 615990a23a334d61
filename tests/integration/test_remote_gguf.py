import pytest
from factories import write_llama_gguf

from runlocal.errors import ModelNotFoundError, RemoteError
from runlocal.model import gguf as reader
from runlocal.model.remote import read_remote_gguf
from runlocal.testing.range_server import serve_directory


def test_remote_header_matches_local_and_fetches_only_the_header(tmp_path):
    # a 4 GiB sparse file: the header is a few hundred KB, the rest must never be transferred
    p = write_llama_gguf(tmp_path / "big.gguf", vocab=30000, tokens=30000, sparse_to=4 << 30)
    with serve_directory(tmp_path) as (base, stats):
        spec, transferred = read_remote_gguf(f"{base}/big.gguf")
    local = reader.read_gguf(p)
    assert spec.file_bytes == local.file_bytes and spec.n_layers == local.n_layers
    assert transferred == stats["sent"]
    assert transferred < 4 << 20


def test_remote_split_files_add_up(tmp_path):
    write_llama_gguf(tmp_path / "m-00001-of-00002.gguf")
    write_llama_gguf(tmp_path / "m-00002-of-00002.gguf")
    with serve_directory(tmp_path) as (base, _):
        spec, _ = read_remote_gguf(f"{base}/m-00001-of-00002.gguf")
    assert spec.file_bytes == reader.read_gguf(tmp_path / "m-00001-of-00002.gguf").file_bytes


def test_remote_missing_file(tmp_path):
    with serve_directory(tmp_path) as (base, _):
        with pytest.raises(ModelNotFoundError, match="404"):
            read_remote_gguf(f"{base}/absent.gguf")


def test_server_without_ranges_is_refused_not_downloaded(tmp_path):
    write_llama_gguf(tmp_path / "m.gguf", sparse_to=64 << 20)
    with serve_directory(tmp_path, honour_ranges=False) as (base, stats):
        with pytest.raises(RemoteError, match="range"):
            read_remote_gguf(f"{base}/m.gguf")
    assert stats["sent"] < 16 << 20     # the 64 MiB body was abandoned, not read


def test_nothing_listening():
    with pytest.raises(RemoteError):
        read_remote_gguf("http://127.0.0.1:9/m.gguf")
