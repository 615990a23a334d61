"""Parse and format byte sizes and token counts the way people type them."""

from __future__ import annotations

import re

from .errors import InputError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30     # the binary units every module counts in


def round_up(n: int, to: int) -> int:
    """n rounded up to a multiple of ``to``: ggml's GGML_PAD, ggml-alloc's alignment, GGUF's tensor alignment."""
    return (n + to - 1) // to * to


_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3, "t": 1000**4, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
# A bare "G"/"M" means GiB/MiB: that is what GPU marketing ("24G") and nvidia-smi mean by it.
_BARE_BINARY = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
# A size with no unit is bytes ('24e9'); below 64 MiB it is no memory an LLM is planned on, but a number whose unit
# was left out ('64' for 64 GiB of RAM), refused rather than read as 64 bytes.
BARE_BYTES_FLOOR = 64 * MiB
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.I)


def parse_size(text: str | int | float, *, field: str = "size") -> int:
    """'24G' / '24GiB' → 24·2³⁰; '24GB' → 24·10⁹; '24000M' → 24000·2²⁰; '24e9' → 24·10⁹ bytes."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        m = _SIZE.match(str(text))
        if not m or m.group(2).lower() not in _UNITS:
            raise InputError(f"{field}: cannot read size '{text}' (expected e.g. 24G, 24GiB, 24000M, 24e9)")
        value, unit = float(m.group(1)), m.group(2).lower()
    factor = _BARE_BINARY.get(unit, _UNITS.get(unit, 1))
    if not value > 0 or value * factor > 2**60:
        raise InputError(f"{field}: size '{text}' must be positive and below 1 EiB")
    if not unit and value < BARE_BYTES_FLOOR:
        # "--ram 64" means 64 GiB to whoever typed it; read as bytes it plans on nothing and answers "does not fit"
        raise InputError(f"{field}: '{str(text).strip()}' has no unit — write {_unit_hint(str(text).strip(), value)}")
    return int(round(value * factor))


def _unit_hint(shown: str, value: float) -> str:
    """The unit a bare number most likely left out, by its size: from 1,024 up it reads as MiB (nvidia-smi's and
    free -m's unit: 24576 is a 24 GiB card, not 24 TiB), below as GiB ('--ram 64')."""
    if value >= 1024:
        gib = value / 1024
        whole = gib == int(gib)
        return f"{shown}M (MiB, = {gib:,.{0 if whole else 1}f} GiB)" + (f" or {int(gib)}G" if whole else "")
    return f"{shown}G (GiB) or {shown}GB"


MAX_SIZES = 64      # GPUs in one --vram, as --gpu's "N x NAME" (hardware/catalog.parse_device_spec)
_COUNT = re.compile(r"^\s*(\d+)\s*[x×*]\s*(\S.*)$", re.I)


def parse_sizes(text: str, *, field: str = "vram") -> list[int]:
    """One size per GPU: '24G' (one), '2x24G' (two alike), '24G,16G' (one each) — how posts describe unnamed cards
    ("2 × 24 GB"); each size as parse_size reads it."""
    sizes: list[int] = []
    for item in str(text).split(","):
        m = _COUNT.match(item)
        count, size = (int(m.group(1)), m.group(2)) if m else (1, item)
        if not 1 <= count <= MAX_SIZES or len(sizes) + count > MAX_SIZES:
            raise InputError(f"{field}: at most {MAX_SIZES} GPUs (a count of 1-{MAX_SIZES} before 'x'), got {item.strip()!r}")
        sizes += [parse_size(size, field=field)] * count
    return sizes


def parse_tokens(text: str | int, *, field: str = "ctx") -> int:
    """'8192', '8k' (= 8192), '128K', '1M' (= 1048576) → a positive token count."""
    s = str(text).strip().lower().replace("_", "").replace(",", "")
    mult = 1
    if s.endswith("k"):
        mult, s = 1024, s[:-1]
    elif s.endswith("m"):
        mult, s = 1024 * 1024, s[:-1]
    try:
        exact = float(s) * mult
        value = int(exact)
    except (ValueError, OverflowError):
        raise InputError(f"{field}: '{text}' is not a token count (expected e.g. 8192 or 32k)") from None
    if exact != value:      # '1.5k' is 1,536 tokens; '512.7' is none
        raise InputError(f"{field}: '{text}' is not a whole number of tokens (expected e.g. 8192 or 32k)")
    if value <= 0:
        raise InputError(f"{field}: must be a positive number of tokens, got '{text}'")
    if value > 1 << 31:
        raise InputError(f"{field}: {value} tokens is beyond any model's context (max 2^31)")
    return value


def format_bytes(n: int | float | None) -> str:
    """Binary units with three significant digits: 8.03 GiB, 512 MiB."""
    if n is None:
        return "—"
    sign = "-" if n < 0 else ""
    n = abs(float(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            if unit == "B":
                return f"{sign}{int(n)} B"
            return f"{sign}{n:.3g} {unit}" if n < 100 else f"{sign}{n:.0f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_count(n: int | None) -> str:
    """Parameter counts: 8.03B, 494M."""
    if n is None:
        return "—"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(n)
