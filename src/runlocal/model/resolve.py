"""The MODEL argument → a ModelSpec: a path, a GGUF URL, a Hub repo id, or a catalog alias.

What may be read is the caller's ``ReadPolicy`` (model/policy.py): everything for the CLI, aliases and Hub
repo ids only for a server unless its operator allows a folder or hosts.
"""

from __future__ import annotations

import re

from ..errors import ModelNotFoundError
from .policy import ReadPolicy
from .spec import ModelSpec

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# the characters of a model's name (a catalog alias, an Ollama-style tag, a Hub repo id), as a JSON Schema pattern
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:+-]*(/[A-Za-z0-9_.-]+)?$"
_MODEL_NAME = re.compile(MODEL_NAME_PATTERN)
_ASCII_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")      # Hub repo ids are ASCII


def names_a_model(ref: str) -> bool:
    """Whether ``ref`` names a model by name alone, as a server resolves one: a catalog alias (any spelling the
    catalog knows it by: qwen3:8b, meta-llama/Llama-3.1-8B-Instruct) or a Hugging Face repo id (owner/name), in
    MODEL_NAME_PATTERN's characters. Not a path, a URL or free text: what a public server keeps and shows of the
    model names callers send (api/benchmarks.py)."""
    from . import catalog

    if not _MODEL_NAME.match(ref):
        return False
    return catalog.find_entry(ref) is not None or bool(_ASCII_REPO_ID.match(ref))


def resolve_model(ref: str, policy: ReadPolicy | None = None) -> ModelSpec:
    policy = policy or ReadPolicy()
    ref = ref.strip()
    if not ref:
        raise ModelNotFoundError("model: empty name (expected an alias, a path, a GGUF URL or owner/name)")
    if ref.startswith(("http://", "https://", "hf://")):
        from .remote import read_remote_gguf

        return read_remote_gguf(ref, policy=policy)[0]
    path = policy.local_path(ref)
    if path is not None:
        if path.suffix == ".gguf":
            from .gguf import read_gguf

            return read_gguf(path)
        from .local import read_model_dir

        return read_model_dir(path)
    if policy.local_paths and (ref.endswith((".gguf", ".json")) or ref.startswith((".", "/", "~"))):
        raise ModelNotFoundError(f"{ref}: no such file" if policy.local_dir is None else "model: no such file")
    from . import catalog

    if catalog.find_entry(ref) is not None or not _REPO_ID.match(ref):
        return catalog.lookup(ref)
    from .hub import read_hub_model

    return read_hub_model(ref, policy=policy)
