"""The GGUF names convert_hf_to_gguf.py gives a catalog model's tensors, without importing gguf-py.

quant/gguf_mix.py maps Hugging Face parameter names to GGUF names with gguf-py's TensorNameMap, and the
model's family to its general.architecture. For the catalog models those answers are a pure function of data
that ships with the package, so they are tabulated in ``data/gguf_catalog_names.json`` by
``python -m runlocal.quant.gguf_names_table`` (per architecture, a name with its block number as ``{bid}`` →
the GGUF name, or null where gguf-py has none); tests/test_gguf_names_table.py regenerates the table and
requires it to equal the shipped one. A model that is not a catalog entry as shipped (edited, or read from a
file) uses gguf-py itself.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from ..model.spec import ModelSpec
from .gguf_table import params_of

TABLE = "gguf_catalog_names.json"
_LAYER = re.compile(r"((?:^|\.)(?:layers|h|blocks|block|layer)\.)(\d+)(\.|$)")


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    return json.loads(resources.files("runlocal.data").joinpath(TABLE).read_text(encoding="utf-8"))


def _entry(spec: ModelSpec) -> dict[str, Any] | None:
    if not spec.source.startswith("catalog:"):
        return None
    entry = _table()["models"].get(spec.source.removeprefix("catalog:"))
    # guards against a catalog edit: the same tensors as when the table was written
    if entry is None or entry["params"] != params_of(spec) or entry["tensors"] != len(spec.tensors):
        return None
    return entry


def catalog_arch(spec: ModelSpec) -> str | None:
    """The catalog model's gguf architecture name; "" when it has none; None when the table does not know it."""
    entry = _entry(spec)
    return None if entry is None else (entry["arch"] or "")


@lru_cache(maxsize=16384)
def template(name: str) -> tuple[str, int | None]:
    """A parameter name with its block number replaced by {bid}, and that number. Kept by name: a model's conversion
    (gguf_tensors) and its names (gguf_names) ask for each, and a family's models share them."""
    m = _LAYER.search(name)
    if not m:
        return name, None
    return name[:m.start(2)] + "{bid}" + name[m.end(2):], int(m.group(2))


class ShippedNameMap:
    """TensorNameMap.get_name for the names of the catalog models, from the shipped table."""

    def __init__(self, names: dict[str, str | None], n_blocks: int) -> None:
        self.names, self.n_blocks = names, n_blocks

    def get_name(self, key: str) -> str | None:
        tmpl, bid = template(key)
        if tmpl not in self.names:
            raise KeyError(key)       # not tabulated: the generator and this lookup disagree, a bug
        out = self.names[tmpl]
        if out is None or bid is None:
            return out
        return out.replace("{bid}", str(bid)) if bid < self.n_blocks else None


def catalog_name_map(spec: ModelSpec, arch: str) -> ShippedNameMap | None:
    entry = _entry(spec)
    if entry is None or entry["arch"] != arch:
        return None
    return ShippedNameMap(_table()["names"][arch], spec.n_layers)


class _Recorder:
    """Wraps gguf-py's map while the table is built: every name asked, with its answer."""

    def __init__(self, real, seen: dict[str, str | None]) -> None:
        self.real, self.seen = real, seen

    def get_name(self, key: str) -> str | None:
        out = self.real.get_name(key)
        tmpl, bid = template(key)
        out_tmpl = out
        if out is not None and bid is not None:
            out_tmpl = re.sub(rf"(^|\.){bid}(\.|$)", r"\1{bid}\2", out, count=1)
            if out_tmpl.replace("{bid}", str(bid)) != out:
                raise ValueError(f"{key} → {out}: the block number does not carry over")
        if self.seen.get(tmpl, out_tmpl) != out_tmpl:
            raise ValueError(f"{tmpl}: two answers ({self.seen[tmpl]}, {out_tmpl})")
        self.seen[tmpl] = out_tmpl
        return out


def build() -> dict[str, Any]:
    """The table from the installed gguf-py, over every catalog model (gguf_tensors and gguf_names ask for each
    of its tensors)."""
    from ..model import catalog
    from . import gguf_convert

    models: dict[str, Any] = {}
    names: dict[str, dict[str, str | None]] = {}
    real_map, name_map = gguf_convert._gguf_name_map, gguf_convert._name_map
    # a conversion kept from an earlier plan in this process would answer without asking the recorder
    gguf_convert._gguf_tensors.cache_clear()
    gguf_convert._CONVERTED.clear()
    gguf_convert._NAMES.clear()
    for alias in catalog.aliases():
        spec = catalog.lookup(alias)
        arch = gguf_convert.converter_arch(spec)
        models[alias] = {"params": spec.params, "tensors": len(spec.tensors), "arch": arch}
        if arch is None or not spec.tensors:
            continue
        seen = names.setdefault(arch, {})
        recorder = _Recorder(real_map(arch, spec.n_layers), seen)

        def recorded(spec: ModelSpec, arch: str, recorder: _Recorder = recorder) -> _Recorder:
            return recorder

        gguf_convert._name_map = recorded       # every name the converter asks for goes through the recorder
        try:
            gguf_convert.gguf_tensors(spec)
            gguf_convert.gguf_names(spec)
        finally:
            gguf_convert._name_map = name_map
    return {"generator": "python -m runlocal.quant.gguf_names_table", "gguf": _gguf_version(),
            "models": models, "names": {a: dict(sorted(n.items())) for a, n in sorted(names.items())}}


def _gguf_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gguf")
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    from pathlib import Path

    out = Path(__file__).resolve().parent.parent / "data" / TABLE
    out.write_text(json.dumps(build(), indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out}")
