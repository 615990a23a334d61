"""A local Hugging Face model: config.json, plus the safetensors headers beside it when present."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import ModelFormatError, ModelNotFoundError
from . import safetensors
from .limits import MAX_TENSORS, check_spec, loads_bounded
from .spec import ModelSpec, TensorInfo

# The largest config.json in the catalog is 3.6 KB (Qwen3.5-27B); 4 MiB refuses a file that is not one
# before it is read.
MAX_CONFIG_BYTES = 4 << 20
# Kimi-K2's model.safetensors.index.json lists ~211,000 tensors in about 21 MB; 48 MiB is twice that.
MAX_INDEX_BYTES = 48 << 20
# Llama-3.1-405B ships 191 shards, DeepSeek-V3 163; 1024 is 5× the most we know.
MAX_SHARDS = 1024


def read_json(path: Path, what: str = "config.json", max_bytes: int = MAX_CONFIG_BYTES) -> dict:
    """A JSON object from a model folder, refused by size before it is read and bounded as it is parsed."""
    try:
        if path.stat().st_size > max_bytes:     # refused unread; the read below is capped too (a growing file)
            raise ModelFormatError(f"{path}: {what} is larger than {max_bytes >> 20} MiB (expected a small JSON file)")
        with path.open("rb") as f:
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise ModelNotFoundError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelFormatError(f"{path}: is a folder, expected a {what} file") from None
    if len(raw) > max_bytes:
        raise ModelFormatError(f"{path}: {what} is larger than {max_bytes >> 20} MiB (expected a small JSON file)")
    doc = loads_bounded(raw, str(path), what)
    if not isinstance(doc, dict):
        raise ModelFormatError(f"{path}: {what} must hold a JSON object")
    return doc


def read_config(path: Path) -> dict:
    return read_json(path)


def read_quant_config(folder: Path, config: dict) -> dict | None:
    """hf_quant_config.json beside a config.json that has no quantization_config (NVIDIA ModelOpt ≤ 0.29 writes its
    quantization there; vLLM reads it then: model/modelopt.py), under config.json's size cap."""
    path = folder / "hf_quant_config.json"
    if "quantization_config" in config or not path.is_file():
        return None
    return read_json(path, "hf_quant_config.json")


def shard_names(folder: Path) -> list[str]:
    """The safetensors files of a model folder: from the index when there is one."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = read_json(index, "safetensors index", MAX_INDEX_BYTES).get("weight_map")
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise ModelFormatError(f"{index}: missing 'weight_map' (expected tensor name → file)")
        names = sorted(set(weight_map.values()))
    else:
        names = sorted(p.name for p in folder.glob("*.safetensors"))
    if len(names) > MAX_SHARDS:
        raise ModelFormatError(f"{folder}: {len(names):,} safetensors shards (expected at most {MAX_SHARDS})")
    for n in names:
        if Path(n).name != n or not n.endswith(".safetensors"):
            raise ModelFormatError(f"{index}: shard name {n[:80]!r} is not a .safetensors file in this folder")
    return names


def with_file_tensors(spec: ModelSpec, tensors: list[TensorInfo], quant: str | None) -> ModelSpec:
    """Replace the config-derived tensor list with the one actually stored (exact dtypes and bytes)."""
    if not tensors:
        return spec
    dtypes = sorted({t.dtype for t in tensors if t.dtype})
    return check_spec(replace(spec, tensors=tuple(tensors), file_quant=spec.file_quant or "/".join(dtypes).lower(),
                              notes=spec.notes + (f"{len(tensors)} tensors read from safetensors headers",)))


def _starts_json_object(path: Path) -> bool:
    """The file's first non-blank byte opens a JSON object, as a config.json under another name does."""
    with path.open("rb") as f:
        return f.read(4096).lstrip()[:1] == b"{"


def read_model_dir(path: str | Path) -> ModelSpec:
    from .hf_config import spec_from_config

    p = Path(path)
    folder = p if p.is_dir() else p.parent
    config_path = p if p.is_file() else p / "config.json"
    if not config_path.is_file():
        raise ModelNotFoundError(f"{p}: no config.json here")
    if p.is_file() and p.suffix != ".json" and not _starts_json_object(p):
        # a file named as the model that is neither (/etc/passwd): not "config.json is not valid JSON"
        raise ModelFormatError(f"{p}: not a model folder, a GGUF file or a config.json (expected one of those)")
    config = read_config(config_path)
    spec = spec_from_config(config, id=folder.name or str(folder), source=str(config_path),
                            quant_config=read_quant_config(config_path.parent, config))
    tensors: list[TensorInfo] = []
    for name in shard_names(folder):
        tensors += safetensors.read_local(folder / name)[0]
        if len(tensors) > MAX_TENSORS:
            raise ModelFormatError(f"{folder}: more than {MAX_TENSORS:,} tensors in the safetensors shards")
    return with_file_tensors(spec, tensors, spec.file_quant)
