"""Models on the Hugging Face Hub by repo id, through huggingface_hub (its cache, HF_TOKEN, HF_HUB_OFFLINE)."""

from __future__ import annotations

from ..errors import InputError, ModelFormatError, ModelNotFoundError, RemoteError, RunlocalError
from .local import read_config, with_file_tensors
from .policy import ReadPolicy
from .safetensors import hf_role
from .spec import ModelSpec, TensorInfo


def read_hub_model(repo_id: str, *, revision: str | None = None, policy: ReadPolicy | None = None) -> ModelSpec:
    """The repo's config.json and safetensors headers. Under a server's policy the machine's HF_TOKEN is sent
    only when the operator allows it, and a config.json over the policy's cap is not downloaded."""
    from pathlib import Path

    from huggingface_hub import get_safetensors_metadata, hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    from .hf_config import spec_from_config

    policy = policy or ReadPolicy()
    token = None if policy.hf_token else False          # None: huggingface_hub's own (HF_TOKEN, login); False: none
    try:
        if not _hub_cached(repo_id, revision) and not _hub_reachable():
            return _offline_sibling(repo_id)    # at once, instead of huggingface_hub's ~25 s of retries
        if policy.max_config_bytes is not None:
            _check_config_size(repo_id, revision, token, policy.max_config_bytes)
        config_path = hf_hub_download(repo_id, "config.json", revision=revision, token=token)
    except HFValidationError:
        raise InputError(f"model: '{repo_id[:100]}' is not a Hub repo id (owner/name, at most 96 characters)") from None
    except GatedRepoError:
        raise RemoteError(f"{repo_id}: gated repo; accept its terms on the Hub and set HF_TOKEN") from None
    except RepositoryNotFoundError:
        raise ModelNotFoundError(f"{repo_id}: no such repo on the Hub (or it is private; set HF_TOKEN)") from None
    except LocalEntryNotFoundError:
        # before EntryNotFoundError: huggingface_hub derives it from that class, and offline is not "no config.json"
        return _offline_sibling(repo_id)
    except EntryNotFoundError:
        raise ModelNotFoundError(f"{repo_id}: repo has no config.json (a GGUF repo? pass hf://{repo_id}/<file>.gguf)") from None
    except HfHubHTTPError as e:
        raise RemoteError("model: Hub request failed" if policy.plain_errors else f"{repo_id}: Hub request failed: {e}") from None
    config = read_config(Path(config_path))
    quant_config = _hub_quant_config(repo_id, revision, token, policy) if "quantization_config" not in config else None
    spec = spec_from_config(config, id=repo_id, source=f"hub:{repo_id}", repo_id=repo_id, quant_config=quant_config)
    try:
        meta = get_safetensors_metadata(repo_id, revision=revision, token=token)
    except Exception:  # offline, no safetensors, or an old repo with .bin files: the config alone suffices
        return spec
    tensors: list[TensorInfo] = []
    for file_meta in meta.files_metadata.values():
        for name, info in file_meta.tensors.items():
            role, layer = hf_role(name)
            start, end = info.data_offsets
            tensors.append(TensorInfo(name, tuple(info.shape), role, layer, info.dtype, end - start))
    return with_file_tensors(spec, tensors, spec.file_quant)


def _hub_quant_config(repo_id: str, revision: str | None, token, policy: ReadPolicy) -> dict | None:
    """The repo's hf_quant_config.json (NVIDIA ModelOpt), under the same size cap and JSON limits as config.json;
    None when the repo has none."""
    from pathlib import Path

    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, LocalEntryNotFoundError

    from .local import read_json

    try:
        if policy.max_config_bytes is not None:
            _check_config_size(repo_id, revision, token, policy.max_config_bytes, "hf_quant_config.json")
        path = hf_hub_download(repo_id, "hf_quant_config.json", revision=revision, token=token)
    except LocalEntryNotFoundError:     # offline with config.json cached but not this file: plan from config.json
        return None
    except EntryNotFoundError:
        return None
    except HfHubHTTPError as e:
        raise RemoteError("model: Hub request failed" if policy.plain_errors else f"{repo_id}: Hub request failed: {e}") from None
    return read_json(Path(path), "hf_quant_config.json")


def _offline_sibling(repo_id: str) -> ModelSpec:
    """Offline and not cached: the catalog's same-owner sibling (base vs. instruct name) if it has one, else the reason."""
    from .catalog import sibling_spec

    spec = sibling_spec(repo_id)
    if spec is None:
        raise _not_here(repo_id)
    return spec


def _not_here(repo_id: str) -> RunlocalError:
    """Not in the cache and the Hub out of reach: offline by choice is the model not found here (a 4xx); an
    unreachable Hub is the upstream's failure (502)."""
    from huggingface_hub import constants

    error = ModelNotFoundError if constants.HF_HUB_OFFLINE else RemoteError
    why = "offline (HF_HUB_OFFLINE is set)" if constants.HF_HUB_OFFLINE else "offline (the Hub is unreachable)"
    return error(f"{repo_id}: {why} and the model is not in the catalog or the Hugging Face cache "
                 "(go online once, or `runlocal models` for the catalog)")


def _hub_cached(repo_id: str, revision: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json", revision=revision), str)


def _hub_reachable(timeout: float = 3.0) -> bool:
    """One TCP connection to the Hub endpoint (HF_ENDPOINT): False at once when offline or unresolvable."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    url = urlparse(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout).close()
    except OSError:
        return False
    return True


def _check_config_size(repo_id: str, revision: str | None, token, cap: int, filename: str = "config.json") -> None:
    """A HEAD request for a JSON file's size before downloading it (a repo may hold a config of any size)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        RepositoryNotFoundError,
    )

    try:
        meta = get_hf_file_metadata(hf_hub_url(repo_id, filename, revision=revision), token=token)
    except (EntryNotFoundError, GatedRepoError, RepositoryNotFoundError):
        raise
    except Exception:   # offline or unreachable: hf_hub_download falls back to its cache, or says why it cannot
        return
    if meta.size is not None and meta.size > cap:
        raise ModelFormatError(f"model: the repo's {filename} is {meta.size:,} bytes; this server reads at most {cap:,}")
