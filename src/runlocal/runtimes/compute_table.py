"""Shipped ggml compute-buffer simulations for catalog models: a lookup before simulating, exact by construction.

`llamacpp_compute.simulated_compute` asks `lookup` before it runs the ggml-alloc simulation (runtimes/ggml/). An
entry is keyed by three things, and answers only where all three equal the question's:
- the code: a SHA-256 over the source of every module the simulation's result depends on (CODE_MODULES and every
  file of runtimes/ggml/; tests/unit/test_compute_table.py proves the list covers the simulation's import closure);
- the model: a SHA-256 of the ModelSpec's repr (every field, every tensor's name, shape, type and size: the spec
  the simulation was asked about, a GGUF view or graph_prefix's shortened one), once per model object;
- the arguments: simulated_compute's own, as JSON.
A stale file (another code digest), another spec or other arguments are a miss: the simulation runs as before. So
the table can make a plan faster, never different. One small gzip'd JSON file per
catalog model (data/compute_table/<id>.json.gz: an Ollama plan's arguments list every layer's device and override,
so the text repeats itself ~100×), read only when that model's simulation is first asked, written by
``python -m runlocal.compute_table_build`` (which settings it covers: that module's docstring).
``RUNLOCAL_COMPUTE_TABLE=0`` (or ``USE = False``) turns the lookup off: benchmarks/planning.py prints both.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..memo import IdMemo

FORMAT = 1
# the modules a simulation's result depends on beside runtimes/ggml/ (all of whose files are digested): the
# simulation's entry and everything importing it brings in (tests/unit/test_compute_table.py checks the closure)
CODE_MODULES = (
    "runlocal", "runlocal.errors", "runlocal.kv", "runlocal.memo", "runlocal.model", "runlocal.model.spec",
    "runlocal.quant", "runlocal.quant.formats", "runlocal.quant.ggml_types", "runlocal.runtimes",
    "runlocal.runtimes.backends", "runlocal.runtimes.base", "runlocal.runtimes.ggml_scope",
    "runlocal.runtimes.llamacpp_compute",
    "runlocal.runtimes.llamacpp_layout", "runlocal.runtimes.options", "runlocal.runtimes.registry", "runlocal.units",
)
PACKAGE = Path(__file__).resolve().parents[1]
TABLE_DIR = PACKAGE / "data" / "compute_table"
USE = True

Result = tuple[tuple[int, ...], int]


def enabled() -> bool:
    return USE and os.environ.get("RUNLOCAL_COMPUTE_TABLE", "1") != "0"


def module_path(name: str) -> Path:
    rel = Path(*name.split(".")[1:])
    return PACKAGE / rel / "__init__.py" if (PACKAGE / rel).is_dir() else PACKAGE / rel.with_suffix(".py")


def code_files() -> list[Path]:
    ggml = sorted((PACKAGE / "runtimes" / "ggml").glob("*.py"))
    return [module_path(m) for m in CODE_MODULES] + ggml


@lru_cache(maxsize=1)
def code_digest() -> str | None:
    """SHA-256 over the simulation's source files (their paths and bytes); None where one cannot be read."""
    h = hashlib.sha256(f"compute table {FORMAT}\n".encode())
    try:
        for path in code_files():
            h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return h.hexdigest()


def model_digest(model: Any) -> str:
    """SHA-256 of the spec's repr, once per model object (~1.5 ms for a 1,100-tensor MoE)."""
    return _DIGESTS.get(model, None, lambda: hashlib.sha256(repr(model).encode()).hexdigest())


def args_key(args: tuple) -> str | None:
    """simulated_compute's arguments as compact JSON (tuples as lists); None for a value JSON cannot hold."""
    try:
        return json.dumps(args, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def args_from_key(key: str, names: list[str]) -> tuple:
    """args_key inverted: layer_gpus and overrides back to tuples (the test re-simulates stored entries). The key
    lists simulated_compute's arguments after the model in its parameters' order: ``names`` are those parameters
    (the caller reads them from llamacpp_compute.simulated_compute, which imports this module)."""
    args = dict(zip(names, json.loads(key), strict=True))
    if args["layer_gpus"] is not None:
        args["layer_gpus"] = tuple(args["layer_gpus"])
    args["overrides"] = tuple(tuple(o) for o in args["overrides"])
    return tuple(args.values())


def file_name(model_id: str) -> str | None:
    return f"{model_id}.json.gz" if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", model_id) else None


def read_text(path: Path) -> str:
    return read_bytes(path).decode("utf-8")


def read_bytes(path: Path) -> bytes:
    return zlib.decompress(path.read_bytes(), wbits=31)     # gzip's format


@lru_cache(maxsize=64)
def _file(model_id: str) -> Callable[[str], Entries | None] | None:
    """model digest → its {args key → [[gpu bytes…], host bytes]} in one catalog model's file, where the file exists
    and was made by this code."""
    name = file_name(model_id)
    path = TABLE_DIR / name if name else None
    if path is None or not path.is_file():
        return None
    try:
        data = read_bytes(path)
        head = _written_head(data)
        doc = head if head is not None else json.loads(data)
        if doc.get("format") != FORMAT or doc.get("code") != code_digest():
            return None
        if head is not None:
            return lru_cache(maxsize=None)(lambda digest: _section(data, digest))
        models: dict[str, dict[str, list]] = doc["models"]
    except (OSError, zlib.error, ValueError, KeyError, AttributeError):     # a damaged file: simulate
        return None
    return models.get


# A file as compute_table_build.render writes it: a header line, '"models": {', then per model digest a line
# '"<digest>": {', its entries one a line sorted by key ('<json.dumps(key)>: <value>', then ',' but for the last),
# and a line '}' or '},'. A plan asks about one or two of a file's specs and a handful of their entries, and the
# whole text is ~5 MB for a big MoE (an Ollama launch's arguments list every layer, so nearly all of it is keys):
# parsing all of it cost ~11 ms of such a model's first plan, and one spec's lines ~6.5 ms (GLM-4.5's 684
# entries, 3.4 MB). So a spec's lines are found where it is first asked about, and an entry is found by bisecting
# its sorted lines, each probed line's key decoded alone. Any other layout (a file written by hand or by a test)
# is parsed whole, as before.

def _written_head(text: str | bytes) -> dict | None:
    """The header of a file in render's layout (format, code …); None for another layout."""
    data = text.encode() if isinstance(text, str) else text
    first, _, rest = data.partition(b"\n")
    if not first.endswith(b",") or not rest.startswith(b'"models": {\n'):
        return None
    try:
        head = json.loads(first[:-1] + b"}")
    except ValueError:
        return None
    return head if isinstance(head, dict) else None


class _Section:
    """One model digest's entries in a file in render's layout, read where asked: ``get(key)`` bisects the lines
    (sorted by key, as render writes them) and parses the one value asked for. The lines' starts are found once.
    (JSON text escapes newlines, so no entry holds one, and a key's JSON text ends at its first ']": ['.)"""

    def __init__(self, data: bytes, starts: list[int], end: int) -> None:
        self._data, self._starts, self._end = data, starts, end

    def __len__(self) -> int:
        return len(self._starts)

    def _line(self, i: int) -> tuple[str, int, int]:
        """Line i's key, and where its value starts and ends."""
        start = self._starts[i]
        stop = self._starts[i + 1] - 1 if i + 1 < len(self._starts) else self._end
        colon = self._data.index(b']": [', start, stop) + 2     # (a key is a JSON array: within its text a quote is \\")
        return json.loads(self._data[start:colon]), colon + 2, stop

    def get(self, key: str) -> list | None:
        lo, hi = 0, len(self._starts)
        while lo < hi:
            mid = (lo + hi) // 2
            at, value_at, stop = self._line(mid)
            if at == key:
                return json.loads(self._data[value_at:stop].removesuffix(b","))
            lo, hi = (mid + 1, hi) if at < key else (lo, mid)
        return None


def _section(data: bytes, digest: str) -> _Section | None:
    """One model digest's entries (its lines alone); None where the file has none or its lines do not parse: the
    first line that starts with '}' closes the section. (Found line by line: a one-byte search runs at memchr's
    speed, where searching the section's ~3 MB for the two bytes '\\n}' took ~2.5 ms of a big MoE's first plan.)"""
    at = data.find(f'\n"{digest}": {{\n'.encode())
    if at < 0:
        return None
    starts, pos, close = [], data.index(b"\n", at + 1) + 1, ord("}")
    while pos < len(data) and data[pos] != close:
        starts.append(pos)
        nl = data.find(b"\n", pos)
        if nl < 0:      # no line closes the section
            return None
        pos = nl + 1
    if pos >= len(data):
        return None
    end = pos - 1
    section = _Section(data, starts, end)
    try:
        if starts:      # the first and last lines' keys decode: a damaged section is a miss, not an error later
            section._line(0), section._line(len(starts) - 1)
    except ValueError:
        return None
    return section


Entries = dict[str, list] | _Section


def _entries(model: Any) -> Entries | None:
    def find() -> Entries | None:
        entries_of = _file(getattr(model, "id", ""))
        return None if entries_of is None else entries_of(model_digest(model))
    return _ENTRIES.get(model, None, find)


def lookup(model: Any, args: tuple) -> Result | None:
    """The stored simulation of (model, args), or None (simulate)."""
    if not enabled():
        return None
    entries = _entries(model)
    if not entries:
        return None
    key = args_key(args)
    hit = entries.get(key) if key is not None else None
    if hit is None:
        return None
    return tuple(hit[0]), hit[1]


_DIGESTS = IdMemo(256)
_ENTRIES = IdMemo(256)
