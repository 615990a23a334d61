"""The hardware catalog: GPUs, Apple silicon, unified-memory boxes and CPU-only memory systems.

The data lives in ``runlocal/data/devices.json`` (one object per device, each citing a source from the
file's ``sources`` table); this module reads it lazily on first use, caches it, and resolves the loose
names people type (``"4090"``, ``"RTX-4090 24GB"``, ``"m3 max 64gb"``, ``"2x3090"``).

Stdlib only, and nothing is read at import time.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any

from ..errors import InputError, UnknownDeviceError
from ..units import GiB

__all__ = [
    "DEFAULT_UNIFIED_SHARE",
    "MAX_DEVICE_COUNT",
    "Device",
    "UnknownDeviceError",
    "find_device",
    "load_devices",
    "load_sources",
    "normalize_name",
    "parse_device_spec",
    "search_devices",
]

# GPU share of a unified-memory system's RAM when the catalog gives none (Apple's default above 36 GB).
DEFAULT_UNIFIED_SHARE = 0.75
# The most devices one spec may name ("64xh100" is fine, "7900 xtz" is not a count of 7900).
MAX_DEVICE_COUNT = 64


@dataclass(frozen=True)
class Device:
    """One catalog entry. Sizes in bytes, bandwidth in GB/s (10^9), compute in dense TFLOPS/TOPS."""

    id: str
    name: str
    vendor: str
    kind: str                                  # "gpu" | "apple" | "unified" | "cpu"
    family: str                                # variants of one product (memory size, form factor, bin)
    aliases: tuple[str, ...]
    memory_bytes: int
    memory_type: str | None
    bandwidth_gbs: float
    fp16_tflops: float | None = None           # dense tensor, FP16 in / FP32 accumulate
    # FP32 vector peak (CUDA cores x 2 x boost clock): given for the cards without tensor cores (Maxwell, Pascal,
    # GTX 16xx), where ggml-cuda's cuBLAS path runs F32 (backend_speed.cublas_type) and nvidia_peak prices it
    fp32_tflops: float | None = None
    bf16_tflops: float | None = None
    int8_tops: float | None = None
    fp8_tflops: float | None = None
    tdp_w: float | None = None
    launch_year: int | None = None
    launch_price_usd: float | None = None
    unified_memory: bool = False
    gpu_memory_share: float | None = None     # unified memory: share of RAM the GPU may use by default
    share_source: str | None = None
    pcie: str | None = None                    # host link used for offload; None for unified systems
    compute_capability: str | None = None      # NVIDIA only
    backends: tuple[str, ...] = ()
    source: str = ""
    bus_width_bits: int | None = None
    memory_mts: int | None = None              # per-pin data rate, MT/s
    memory_channels: int | None = None         # CPU entries: 64-bit DIMM channels
    notes: str | None = None
    cuda_total_bytes: int | None = None        # what cudaMemGetInfo reports as total (less than marketed)
    cuda_total_source: str | None = None
    gpu_cores: int | None = None               # Apple M3+: published GPU core count (no clock/TFLOPS is published)
    sm_count: int | None = None                # NVIDIA: streaming multiprocessors (ggml-cuda's nsm; notes.sm_count)
    gfx_target: str | None = None              # AMD GPUs: the LLVM target ROCm reports (gfx1151); notes.gfx_target
    # laptop iGPUs: the CPU memory entries of the slower RAM the chip also takes (bandwidth_gbs is its fastest);
    # notes.memory_alternatives
    memory_alternatives: tuple[str, ...] = ()

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GiB

    @property
    def gpu_usable_bytes(self) -> int:
        """Bytes the GPU may allocate: all of it on a discrete card; on unified memory the default
        share of RAM (``gpu_memory_share``, or ``DEFAULT_UNIFIED_SHARE`` when the catalog has none)."""
        if not self.unified_memory:
            return self.memory_bytes
        share = self.gpu_memory_share if self.gpu_memory_share is not None else DEFAULT_UNIFIED_SHARE
        return int(self.memory_bytes * share)


# ---------------------------------------------------------------- loading

def _gib_to_bytes(value: Any, device_id: str) -> int:
    exact = Decimal(str(value)) * GiB
    if exact != exact.to_integral_value() or exact <= 0:
        raise ValueError(f"devices.json: {device_id}: memory_gib {value!r} is not a positive whole number of bytes")
    return int(exact)


def _device_from_json(d: dict[str, Any]) -> Device:
    did = d["id"]
    if "memory_bytes" in d:
        memory = int(d["memory_bytes"])
    elif "memory_gib" in d:
        memory = _gib_to_bytes(d["memory_gib"], did)
    else:
        raise ValueError(f"devices.json: {did}: needs memory_bytes or memory_gib")
    return Device(
        id=did, name=d["name"], vendor=d["vendor"], kind=d["kind"], family=d.get("family") or did,
        aliases=tuple(d.get("aliases") or ()), memory_bytes=memory, memory_type=d.get("memory_type"),
        bandwidth_gbs=float(d["bandwidth_gbs"]),
        fp16_tflops=d.get("fp16_tflops"), fp32_tflops=d.get("fp32_tflops"), bf16_tflops=d.get("bf16_tflops"),
        int8_tops=d.get("int8_tops"),
        fp8_tflops=d.get("fp8_tflops"), tdp_w=d.get("tdp_w"), launch_year=d.get("launch_year"),
        launch_price_usd=d.get("launch_price_usd"), unified_memory=bool(d.get("unified_memory", False)),
        gpu_memory_share=d.get("gpu_memory_share"), share_source=d.get("share_source"), pcie=d.get("pcie"),
        compute_capability=d.get("compute_capability"), backends=tuple(d.get("backends") or ()),
        source=d.get("source", ""), bus_width_bits=d.get("bus_width_bits"), memory_mts=d.get("memory_mts"),
        memory_channels=d.get("memory_channels"), notes=d.get("notes"),
        cuda_total_bytes=int(d["cuda_total_gib"] * GiB) if d.get("cuda_total_gib") else None,
        cuda_total_source=d.get("cuda_total_source"), gpu_cores=d.get("gpu_cores"),
        sm_count=d.get("sm_count"), gfx_target=d.get("gfx_target"),
        memory_alternatives=tuple(d.get("memory_alternatives") or ()),
    )


@lru_cache(maxsize=1)
def _catalog() -> tuple[tuple[Device, ...], dict[str, str]]:
    from importlib.resources import files

    text = files("runlocal.data").joinpath("devices.json").read_text(encoding="utf-8")
    raw = json.loads(text)
    if raw.get("schema") != 1:
        raise ValueError(f"devices.json: unsupported schema {raw.get('schema')!r}")
    devices = tuple(_device_from_json(d) for d in raw["devices"])
    return devices, dict(raw.get("sources") or {})


def load_devices() -> list[Device]:
    """Every catalog device, in catalog order (within a family, the most common variant first)."""
    return list(_catalog()[0])


def load_sources() -> dict[str, str]:
    """Source id → URL, as cited by each device's ``source`` and ``share_source``."""
    return dict(_catalog()[1])


@lru_cache(maxsize=1)
def source_words() -> dict[str, str]:
    """A cited address → what it is, in words (devices.json ``source_words``), for a sentence that names a figure's
    source on the first screen and leaves the address to --explain / --json (review23 #10c, #17)."""
    from importlib.resources import files

    raw = json.loads(files("runlocal.data").joinpath("devices.json").read_text(encoding="utf-8"))
    return dict(raw.get("source_words") or {})


def without_cited_sources(note: str) -> str:
    """``note`` as the first screen prints it: the catalog's cited CUDA totals (each device's cuda_total_source, after
    "; " — hardware/targets.py) left to --explain and --json, where the note is whole (review23 #17: an unrelated
    project's issue address beside "23.64 GiB as CUDA reports its total" confused more than it convinced)."""
    for dev in _catalog()[0]:
        if dev.cuda_total_source:
            note = note.replace(f"; {dev.cuda_total_source}", "")
    return note


# ---------------------------------------------------------------- name matching

_VENDOR_WORDS = re.compile(r"\b(?:nvidia|geforce|amd|radeon|apple|intel|tesla|instinct|gpu|graphics)\b")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# Product names around a chip ("MacBook Pro M3 Max", "Mac Studio M2 Ultra"): the chip decides the memory, the
# product does not. Dropped only before an Apple chip name, so "m3 pro" (a chip) stays.
_APPLE_PRODUCT = re.compile(r"\b(?:macbook(?:\s*(?:pro|air))?|mac\s*(?:studio|mini|pro)|imac(?:\s*pro)?)\s+(?=m\d)")
# A memory size written after a name: "24GB", "24 gb", "24g", "24GiB" — not the "10g" of "a10g".
_MEM_TOKEN = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*(?:gib|gb|g)(?![a-z0-9])")


def normalize_name(text: str) -> str:
    """Lower-case, drop vendor words (nvidia, geforce, amd, radeon, apple, intel, tesla, instinct,
    gpu, graphics) and everything that is not a letter or digit: "NVIDIA GeForce RTX-4090" → "rtx4090"."""
    s = text.lower().replace("×", "x")
    s = _VENDOR_WORDS.sub(" ", s)
    return _NON_ALNUM.sub("", s)


@dataclass(frozen=True)
class _Index:
    keys: dict[str, tuple[Device, ...]]        # normalized id / name / alias → devices (one, if the data is sound)
    order: dict[str, int]                      # device id → catalog position


@lru_cache(maxsize=1)
def _index() -> _Index:
    devices = _catalog()[0]
    keys: dict[str, list[Device]] = {}
    for dev in devices:
        for text in (dev.id, dev.name, *dev.aliases):
            k = normalize_name(text)
            if k and dev not in keys.setdefault(k, []):
                keys[k].append(dev)
    return _Index({k: tuple(v) for k, v in keys.items()}, {d.id: i for i, d in enumerate(devices)})


def names_a_device(text: str) -> bool:
    """Whether ``text`` is a catalog device's id, name or one of its aliases, spelled any way normalize_name folds
    ("NVIDIA GeForce RTX 4090", "rtx-4090", "4090"): a name, not a loose query find_device would still match."""
    return normalize_name(text) in _index().keys


def search_devices(query: str | None) -> list[Device]:
    """The catalog devices a free-text search names, in catalog order: every word of the query found in the device's
    id, name or one of its aliases (so "strix halo" finds the Ryzen AI Max+ 395 entries and "gx10" the DGX Spark),
    compared case-folded and, for spellings like "rtx4090" / "RTX-4090", normalized as find_device normalizes.
    The one filter the API, MCP and the site's /hardware page share; an empty query lists every device."""
    words = (query or "").lower().split()
    if not words:
        return load_devices()

    def texts(d: Device) -> list[str]:
        raw = [d.id, d.name.lower(), *(a.lower() for a in d.aliases)]
        return raw + [normalize_name(t) for t in raw]

    def hit(d: Device) -> bool:
        ts = texts(d)
        whole = normalize_name(" ".join(words))
        return all(any(w in t for t in ts) for w in words) or bool(whole) and any(whole in t for t in ts)

    return [d for d in load_devices() if hit(d)]


def _memory_matches(dev: Device, size: float) -> bool:
    """"80gb" names an 80 GiB card; also accept decimal GB for capacities quoted that way."""
    return abs(dev.memory_bytes / GiB - size) < 0.5 or abs(dev.memory_bytes / 1e9 - size) < 0.5


def _tiers(q: str, idx: _Index):
    """Candidates for a normalized query, loosest last: exact key, key prefix, key substring.
    Each yields (device, the shortest key of that device that matched)."""
    yield [(d, q) for d in idx.keys.get(q, ())]
    if len(q) < 2:
        return
    for test in (str.startswith, str.__contains__):
        best: dict[str, tuple[Device, str]] = {}
        for k, devs in idx.keys.items():
            if k != q and test(k, q):
                for d in devs:
                    if d.id not in best or len(k) < len(best[d.id][1]):
                        best[d.id] = (d, k)
        yield list(best.values())


def _pick(query: str, q: str, cands: list[tuple[Device, str]], idx: _Index) -> Device:
    """One device from a tier's candidates, or UnknownDeviceError listing them if they span families."""
    if len({d.family for d, _ in cands}) > 1:
        ranked = sorted(cands, key=lambda c: (len(c[1]), idx.order[c[0].id]))
        raise UnknownDeviceError(query, [d.id for d, _ in ranked][:5])
    # Within one family: a device carrying the query itself as a key (the bare family name is an alias of
    # its most common variant), then the closest key, then catalog order.
    return min(cands, key=lambda c: (c[1] != q, len(c[1]), idx.order[c[0].id]))[0]


# NVIDIA reuses a workstation card's number across generations: the Quadro RTX 4000 / 5000 / 6000 (Turing, 2018, 8 /
# 16 / 24 GB) and the RTX 4000 / 5000 / 6000 Ada (2023, 20 / 32 / 48 GB), the RTX PRO 6000 Blackwell (2025). A name that
# stops where the matched key goes on with the generation word ("rtx 5000" → "rtx5000ada") does not say which card.
_GENERATION_WORD = re.compile(r"ada|blackwell")


def _lacks_generation(q: str, cands: list[tuple[Device, str]]) -> bool:
    """Whether a prefix/substring match only reached its keys by leaving out their generation word."""
    return any(k != q and _GENERATION_WORD.match(k, k.find(q) + len(q)) for _, k in cands)


# A name that reads as a laptop's integrated GPU ("iris-xe", "uhd-620", "radeon-660m", "vega 8", "arc 130v"), as the
# normalized query: its suggestions come from the catalog's integrated GPUs (unified memory, AMD / Intel), not from
# whatever discrete card or Jetson difflib finds close (review20 finding 12: "iris-xe" → jetson-orin-nx-16gb).
# AMD's iGPUs are three digits and "m" (660M, 780M, 890M); NVIDIA's and AMD's discrete laptop cards carry four digits
# or their family word (RTX 3070M, GTX 1650M, RTX A2000M, RX 6800M) and get discrete suggestions (review20b finding 7)
_INTEGRATED_WORDS = re.compile(r"iris|uhd|igpu|integrated|vega\d|(?<![\d])\d{3}m$|\d{3}v$|hdgraphics|^hd\d{3}")
_DISCRETE_WORDS = re.compile(r"rtx|gtx|quadro|^rx\d|^a\d{4}")


_INTEL_INTEGRATED = re.compile(r"iris|uhd|^hd|arc|\d{3}v$")


def _integrated(d: Device, vendors: tuple[str, ...] = ("amd", "intel")) -> bool:
    return d.kind == "unified" and d.vendor in vendors


def _suggestions(q: str, idx: _Index) -> list[str]:
    if not q:
        return []
    vendors: tuple[str, ...] = ()
    # Intel's words name Intel's iGPUs; "NNNm" / vega, AMD's
    if _INTEGRATED_WORDS.search(q) and not _DISCRETE_WORDS.search(q):
        vendors = ("intel",) if _INTEL_INTEGRATED.search(q) else ("amd",)
    keys = [k for k, ds in idx.keys.items() if any(_integrated(d, vendors) for d in ds)] if vendors else list(idx.keys)
    # a discrete card's name ("gtx 1650m") suggests discrete cards: a box's short alias ("gx10", the DGX Spark) is
    # close by letters, not by kind
    discrete = bool(_DISCRETE_WORDS.search(q))
    out: list[str] = []
    for k in difflib.get_close_matches(q, keys, n=25, cutoff=0.3 if vendors else 0.5) or (keys if vendors else []):
        for d in idx.keys[k]:
            if d.id not in out and (not vendors or _integrated(d, vendors)) and not (discrete and d.kind == "unified"):
                out.append(d.id)
    return out[:5]


# A CPU-only system is its memory kind and channel count; a size written with it ("cpu-32gb", "none 16gb",
# "ddr4-3200 64gb") is how much RAM it has, never which channel count (a 128 GB desktop is still 2-channel). Bare
# "cpu" / "none" take the memory `--gpu none` assumes (verdict.DEFAULT_RAM_BANDWIDTH_GBS: 2-channel DDR5-5600).
_BARE_CPU = ("cpu", "none", "cpuonly")
DEFAULT_CPU_ID = "cpu-ddr5-5600-2ch"


def names_bare_cpu(spec: str) -> bool:
    """Whether a --gpu spec's CPU memory is a bare cpu / none with a size ("cpu-32gb", "rtx-4090,none 64gb"): a size
    is named, the memory is DEFAULT_CPU_ID's assumption, as for --gpu none."""
    for item in spec.lower().split(","):
        m = _MEM_TOKEN.search(item)
        if m and normalize_name(item[: m.start()] + " " + item[m.end():]) in _BARE_CPU:
            return True
    return False


def _cpu_with_ram(rest: str, size: float, idx: _Index) -> Device | None:
    """The CPU memory system a sized name means, with ``size`` GiB of RAM; None when the name is no CPU system."""
    if rest in _BARE_CPU:
        base = next(d for d in _catalog()[0] if d.id == DEFAULT_CPU_ID)
    else:
        named = idx.keys.get(rest, ())
        if len(named) != 1 or named[0].kind != "cpu":
            return None
        base = named[0]
    if not 0 < size <= 1 << 20:
        raise InputError(f"gpu: {size:g} GB of RAM is not a size (give 1 to 1,048,576 GB)")
    if abs(base.memory_bytes / GiB - size) < 0.5:
        return base
    return replace(base, memory_bytes=int(size * GiB))


def find_device(query: str, *, suggest: bool = True) -> Device:
    """The catalog device a loose name means.

    Matching, on names normalized by :func:`normalize_name` ("NVIDIA GeForce RTX-4090" → "rtx4090"):

    1. the query equals a device's id, name or an alias;
    2. else, with a memory size in the query ("a100 40gb", "RTX-4090 24GB", "m4 max 48"), the rest of
       the query is matched (exact, then prefix, then substring) among devices of that memory size;
    3. else a device key starting with the query, then a device key containing it.

    When several devices match at one step they must be variants of one family (memory sizes, SXM/PCIe,
    binned chips), and the pick is deterministic: the variant whose alias *is* the query wins — the
    catalog gives each bare family name to its most common variant ("h100" → H100 SXM 80GB, "a100" →
    A100 SXM 80GB, "4060 ti" → the 8 GB card, "strix halo" → 128 GB) and each bare Apple chip name to its
    base (smallest) memory configuration ("m2 max" → M2 Max 32GB: the conservative choice when
    predicting a fit) — then the shortest matching key, then catalog order. Matches that span families
    ("40" → 4060 / 4070 / …) are ambiguous, and so is a name that leaves out the generation word its match
    goes on with ("rtx 5000" → RTX 5000 Ada, or the Turing Quadro RTX 5000 the catalog lacks: _GENERATION_WORD).

    Raises UnknownDeviceError (a ValueError) carrying ``query`` and up to five ``suggestions``: the
    closest names by difflib for an unknown name, the candidates for an ambiguous one.
    """
    if not isinstance(query, str) or not query.strip():
        raise UnknownDeviceError(str(query), [])
    idx = _index()
    query = _APPLE_PRODUCT.sub("", query.lower())
    q = normalize_name(query)
    exact = idx.keys.get(q)
    if exact:
        return exact[0] if len(exact) == 1 else _pick(query, q, [(d, q) for d in exact], idx)

    size: float | None = None
    rest = q
    m = _MEM_TOKEN.search(query.lower())
    if m:
        size = float(m.group(1))
        rest = normalize_name(query.lower()[: m.start()] + " " + query.lower()[m.end():])
        sized = _cpu_with_ram(rest, size, idx)
        if sized is not None:
            return sized
    if rest:
        for cands in _tiers(rest, idx):
            if size is not None:
                cands = [c for c in cands if _memory_matches(c[0], size)]
            if cands and size is None and _lacks_generation(rest, cands):
                named = [d.id for d, _ in sorted(cands, key=lambda c: idx.order[c[0].id])]
                raise UnknownDeviceError(query, list(dict.fromkeys(named + _suggestions(rest, idx)))[:5])
            if cands:
                return _pick(query, rest, cands, idx)
    # suggest=False: a caller that only asks whether the name is one device skips difflib over every key
    raise UnknownDeviceError(query, _suggestions(rest or q, idx) if suggest else [])


def variant_note(query: str, device: Device) -> str | None:
    """When a loose name picked one of several memory sizes of a family ("m3 max" → the 36 GB M3 Max), the
    variant taken and the others, so the user can name theirs; None when the name was specific."""
    if _MEM_TOKEN.search(query.lower()):
        return None
    variants = sorted((d for d in _catalog()[0] if d.family == device.family and d.kind == device.kind
                       and _MEM_TOKEN.sub("", d.name.lower()) == _MEM_TOKEN.sub("", device.name.lower())),
                      key=lambda d: d.memory_bytes)
    if len(variants) < 2:
        return _board_variant_note(query, device)
    others = ", ".join(f"{d.memory_bytes / GiB:g}" for d in variants if d is not device)
    return (f"'{query.strip()}' is taken as {device.name} ({device.id}); it also comes with {others} GB: "
            f"name yours, e.g. --gpu {variants[-1].id if variants[-1] is not device else variants[0].id}")


def _board_stem(name: str) -> str:
    return " ".join(_MEM_TOKEN.sub("", re.sub(r"\(.*?\)|\bsuper\b", "", name.lower())).split())


def _board_variant_note(query: str, device: Device) -> str | None:
    """A unified-memory board sold in versions that differ in more than memory (Jetson Orin Nano: the Super clocks
    of JetPack 6.1+, the original 15 W clocks, the 4 GB module): the one a bare name takes, and the others by id. A
    name that says "super" has chosen the clocks: only other Super versions are left to name (none in the catalog)."""
    if device.kind != "unified":
        return None
    said_super = re.search(r"super", query.lower()) is not None
    others = [d for d in _catalog()[0] if d is not device and d.family == device.family
              and _board_stem(d.name) == _board_stem(device.name)
              and (not said_super or re.search(r"\bsuper\b", d.name.lower()) is not None)]
    if not others:
        return None
    return (f"'{query.strip()}' is taken as {device.name} ({device.id}); the others: "
            f"{', '.join(f'{d.name} ({d.id})' for d in others)}: name yours, e.g. --gpu {others[0].id}")


def variant_notes(spec: str) -> list[str]:
    """variant_note for each device named in a --gpu spec ("2x m3 max, 4090"), each once."""
    out: list[str] = []
    try:
        find_device(spec, suggest=False)
        items = [spec]                   # one name, "+" included: "ryzen ai max+ 395"
    except UnknownDeviceError:
        items = re.split(r"[,+]", spec)
    for item in items:
        for pattern, group in ((_COUNT_PREFIX, 2), (_COUNT_SUFFIX, 1)):
            m = pattern.match(item)
            if m:
                item = m.group(group)
                break
        try:
            note = variant_note(item, find_device(item))
        except (UnknownDeviceError, InputError):
            continue
        if note and note not in out:
            out.append(note)
    return out


# ---------------------------------------------------------------- "2x3090", "3090,4090", "3090+4090"

_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*[x×*]\s*(.+?)\s*$", re.IGNORECASE)
_COUNT_SUFFIX = re.compile(r"^\s*(.+?)\s*[x×*]\s*(\d+)\s*$", re.IGNORECASE)


def _parse_item(item: str) -> list[Device]:
    item = item.strip()
    if not item:
        raise InputError("gpu: empty device name in the list")
    try:   # whole name first: "ryzen ai max+ 395", "rx 7900 xtx"; its suggestions (difflib) only if it is raised
        return [find_device(item, suggest=False)]
    except UnknownDeviceError as err:
        first_error = err
    for pattern, count_group, name_group in ((_COUNT_PREFIX, 1, 2), (_COUNT_SUFFIX, 2, 1)):
        m = pattern.match(item)
        if not m:
            continue
        count, name = int(m.group(count_group)), m.group(name_group)
        try:
            device = find_device(name)
        except UnknownDeviceError:
            continue
        if not 1 <= count <= MAX_DEVICE_COUNT:
            raise InputError(f"gpu: device count {count} in '{item}' must be 1..{MAX_DEVICE_COUNT}")
        return [device] * count
    if "+" in item:
        parts = item.split("+")
        if all(p.strip() for p in parts):
            try:
                return [d for p in parts for d in _parse_item(p)]
            except (UnknownDeviceError, InputError):
                pass
    try:
        find_device(item)
    except UnknownDeviceError as err:       # the same error, now with its suggestions
        first_error = err
    raise first_error


def parse_device_spec(spec: str) -> list[Device]:
    """Devices from a spec such as "2x3090", "4 x h100", "3090,4090", "3090+4090", "rtx 4090 x2".

    Items are separated by "," (or "+"); "N x NAME" / "NAME x N" repeats a device N times (1..64).
    Each item is tried as a whole name first, then as a count, then split at "+", so names that
    contain "+" or "x" ("ryzen ai max+ 395", "2x ryzen ai max+ 395", "rx 7900 xtx") still resolve.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("gpu: no device given")
    return [d for item in spec.split(",") for d in _parse_item(item)]
