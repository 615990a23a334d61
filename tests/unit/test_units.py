import pytest

from runlocal.errors import InputError
from runlocal.units import format_bytes, parse_size, parse_tokens

GiB = 1024**3


@pytest.mark.parametrize("text, expected", [
    ("24G", 24 * GiB),          # bare G is what GPU specs and nvidia-smi mean: GiB
    ("24GiB", 24 * GiB),
    ("24 GiB", 24 * GiB),
    ("24GB", 24 * 10**9),       # an explicit GB is decimal
    ("24000M", 24000 * 1024**2),
    ("24e9", 24 * 10**9),       # scientific notation is plain bytes
    ("1.5T", int(1.5 * 1024**4)),
    (1024, 1024),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "24X", "-5G", "0", "G24", "1e30"])
def test_parse_size_rejects_with_field_name(bad):
    with pytest.raises(InputError, match="vram"):
        parse_size(bad, field="vram")


@pytest.mark.parametrize("text, expected", [("8192", 8192), ("8k", 8192), ("128K", 131072), ("1M", 1 << 20),
                                            ("32_768", 32768)])
def test_parse_tokens(text, expected):
    assert parse_tokens(text) == expected


@pytest.mark.parametrize("bad", ["0", "-1", "lots", "1e12"])
def test_parse_tokens_rejects(bad):
    with pytest.raises(InputError, match="ctx"):
        parse_tokens(bad)


def test_format_bytes_three_significant_digits():
    assert format_bytes(8 * GiB) == "8 GiB"
    assert format_bytes(int(7.95 * GiB)) == "7.95 GiB"
    assert format_bytes(512 * 1024**2) == "512 MiB"
