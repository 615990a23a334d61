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
