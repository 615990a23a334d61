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
    (2**30, 2**30),             # a number without a unit is bytes when it is a size of memory
    ("68e6", 68 * 10**6),        # just above the 64 MiB floor (67,108,864 bytes)
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "24X", "-5G", "0", "G24", "1e30"])
def test_parse_size_rejects_with_field_name(bad):
    with pytest.raises(InputError, match="vram"):
        parse_size(bad, field="vram")


@pytest.mark.parametrize("bare, hint", [
    ("64", "64G (GiB) or 64GB"), (64, "64G (GiB) or 64GB"), ("1000", "1000G (GiB) or 1000GB"),
    # review16c finding 9: from 1,024 up a bare figure is nvidia-smi's / free -m's MiB — by hand 32,768 / 1,024 =
    # 32 GiB, 24,000 / 1,024 = 23.4375 GiB, 10⁶ / 1,024 = 976.5625 GiB, 67,108,863 / 1,024 = 65,535.999 GiB
    ("32768", "32768M (MiB, = 32 GiB) or 32G"), ("24000", "24000M (MiB, = 23.4 GiB)"),
    ("1e6", "1e6M (MiB, = 976.6 GiB)"), ("67108863", "67108863M (MiB, = 65,536.0 GiB)"),
])
def test_a_bare_number_too_small_for_memory_is_refused_naming_the_unit(bare, hint):
    """review16b finding 3: '--ram 64' was 64 bytes and the answer "does not fit"; 64 MiB = 67,108,864 bytes is the
    least a size without a unit is read as. The hint was '32768G' (32 TiB) for a MiB figure."""
    with pytest.raises(InputError) as err:
        parse_size(bare, field="ram")
    assert str(err.value) == f"ram: '{bare}' has no unit — write {hint}"


def test_the_same_figure_with_a_unit_is_read():
    assert parse_size("64G", field="ram") == 64 * 2**30
    assert parse_size("64GB", field="ram") == 64 * 10**9
    assert parse_size("64B", field="ram") == 64        # bytes said outright are taken as said
    assert parse_size("67108864") == 64 * 2**20        # the floor itself


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
