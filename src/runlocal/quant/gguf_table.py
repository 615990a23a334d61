"""llama.cpp quant names and the catalog's GGUF weight bytes, without importing gguf-py.

gguf-py imports numpy and its whole package (~100 ms), a third of the startup budget of
`runlocal check <alias>` (benchmarks/startup.py).  For catalog models the answer of
``gguf_mix.weight_bytes_by_type`` is a pure function of data that ships with the package, so it
is tabulated in ``data/gguf_catalog_weights.jsonl`` by ``python -m runlocal.quant.gguf_table``;
tests/test_gguf_table.py recomputes every entry with gguf_mix and requires equality. One line a model (the
header first): a check parses only its model's line, not the whole 600 KB table.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from ..memo import per_model
from ..model.spec import ModelSpec

TABLE = "gguf_catalog_weights.jsonl"
_ALIAS = '{"alias":"'           # every model line starts so (keys sorted, no spaces)


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, Any], dict[str, str]]:
    """(the header, each model's line by alias), the lines left unparsed."""
    head, *rows = resources.files("runlocal.data").joinpath(TABLE).read_text(encoding="utf-8").splitlines()
    return json.loads(head), {row[len(_ALIAS):row.index('"', len(_ALIAS))]: row for row in rows}


@lru_cache(maxsize=512)
def _entry(alias: str) -> dict[str, Any] | None:
    row = _table()[1].get(alias)
    return json.loads(row) if row is not None else None


@per_model
def params_of(spec: ModelSpec) -> int:
    """spec.params (a sum over its tensors), once per model object."""
    return spec.params


def supported_ftypes() -> tuple[str, ...]:
    """The llama.cpp file types (``Q4_K_M``, ``IQ3_XXS``, …) gguf_mix can size."""
    return tuple(_table()[0]["ftypes"])


def catalog_weights(spec: ModelSpec, ftype: str) -> dict[str, int] | None:
    """Bytes per ggml type for an unmodified catalog model, or None (then compute with gguf_mix)."""
    if not spec.source.startswith("catalog:"):
        return None
    entry = _entry(spec.source.removeprefix("catalog:"))
    if entry is None or entry["params"] != params_of(spec):      # guards against a catalog edit
        return None
    by_type = entry["by_ftype"].get(ftype)
    return dict(by_type) if by_type is not None else None


def build() -> str:
    """The table's text: a header line, then one line a catalog model, sorted by alias."""
    from ..model import catalog
    from . import gguf_mix

    def line(obj: dict[str, Any]) -> str:
        return json.dumps(obj, separators=(",", ":"), sort_keys=True)

    rows = [line({"generator": "python -m runlocal.quant.gguf_table", "ftypes": list(gguf_mix.SUPPORTED_FTYPES)})]
    for alias in sorted(catalog.aliases()):
        spec = catalog.lookup(alias)
        rows.append(line({"alias": alias, "params": spec.params,
                          "by_ftype": {f: gguf_mix.weight_bytes_by_type(spec, f) for f in gguf_mix.SUPPORTED_FTYPES}}))
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    from pathlib import Path

    out = Path(__file__).resolve().parent.parent / "data" / TABLE
    out.write_text(build(), encoding="utf-8")
    print(f"wrote {out}")
