"""A local Hugging Face model: config.json, plus the safetensors headers beside it when present."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ..errors import ModelFormatError, ModelNotFoundError
from . import safetensors
from .spec import ModelSpec, TensorInfo


def read_config(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelNotFoundError(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelFormatError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ModelFormatError(f"{path}: config.json must hold a JSON object")
    return doc


def shard_names(folder: Path) -> list[str]:
    """The safetensors files of a model folder: from the index when there is one."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = read_config(index).get("weight_map")
        if not isinstance(weight_map, dict):
            raise ModelFormatError(f"{index}: missing 'weight_map' (expected tensor name → file)")
        names = sorted({str(v) for v in weight_map.values()})
        # shards sit beside the index: a name with a folder in it ("../../etc/passwd") is not one
        if any(Path(n).name != n or n in ("", ".", "..") for n in names):
            raise ModelFormatError(f"{index}: 'weight_map' names a file outside the model folder")
        return names
    return sorted(p.name for p in folder.glob("*.safetensors"))


def with_file_tensors(spec: ModelSpec, tensors: list[TensorInfo], quant: str | None) -> ModelSpec:
    """Replace the config-derived tensor list with the one actually stored (exact dtypes and bytes)."""
    if not tensors:
        return spec
    dtypes = sorted({t.dtype for t in tensors if t.dtype})
    return replace(spec, tensors=tuple(tensors), file_quant=spec.file_quant or "/".join(dtypes).lower(),
                   notes=spec.notes + (f"{len(tensors)} tensors read from safetensors headers",))


def read_model_dir(path: str | Path) -> ModelSpec:
    from .hf_config import spec_from_config

    p = Path(path)
    folder = p if p.is_dir() else p.parent
    config_path = p if p.is_file() else p / "config.json"
    if not config_path.is_file():
        raise ModelNotFoundError(f"{p}: no config.json here")
    config = read_config(config_path)
    spec = spec_from_config(config, id=folder.name or str(folder), source=str(config_path))
    tensors: list[TensorInfo] = []
    for name in shard_names(folder):
        tensors += safetensors.read_local(folder / name)[0]
    return with_file_tensors(spec, tensors, spec.file_quant)
