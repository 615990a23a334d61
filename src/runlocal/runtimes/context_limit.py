"""The longest context vLLM and SGLang start with: their own reading of config.json, and their refusal past it.

Both engines derive a maximum from config.json and refuse a longer ``--max-model-len`` / ``--context-length`` at
start-up unless an environment variable allows it (review21 #2: a ``vllm serve --max-model-len 65536`` for Qwen3-8B,
trained at 40,960, was printed as a command that runs). llama.cpp and Ollama warn and run instead.

vLLM (vllm/config/model.py ``_get_and_verify_max_len``; vllm/config.py before the split): the smallest of the length
keys (max_position_embeddings, n_positions, max_seq_len, seq_length, model_max_length, …); then, where config.json
has rope_scaling whose rope_type is not su / longrope / llama3 and the model is not Gemma 3 ("already scaled by RoPE
scaling"), ``derived = original_max_position_embeddings`` for yarn, and ``derived *= factor`` (1.0 where none).
Past it: ``ValueError: User-specified max_model_len (N) is greater than the derived max_model_len (key=D or
model_max_length=None in model's config.json). … To allow overriding this maximum, set the env var
VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.`` Without --max-model-len the derived length is the default.

SGLang (python/sglang/srt/configs/model_config.py ``_derive_context_length``; hf_transformers_utils.py
``get_context_length``): the first of max_sequence_length, seq_length, max_seq_len, model_max_length,
max_position_embeddings, times rope_scaling's factor unless rope_scaling has original_max_position_embeddings or
rope_type llama3. Past it: ``ValueError: … User-specified context_length (N) is greater than the derived
context_length (D). … To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1``.

The model description keeps max_position_embeddings only; rope_scaling is read from the catalog entry's config
(a model outside the catalog: none, so its max_position_embeddings). Neither engine's environment is read here:
the refusal names the variable that lifts it.
"""

from __future__ import annotations

import json
from typing import Any

from ..model.spec import ModelSpec


def _rope_scaling(model: ModelSpec) -> dict[str, Any]:
    from ..model.catalog import find_entry
    from .published import catalog_alias

    alias = catalog_alias(model)
    entry = find_entry(alias) if alias else None
    rope = ((entry or {}).get("config") or {}).get("rope_scaling")
    return rope if isinstance(rope, dict) else {}


def _rope_type(rope: dict[str, Any]) -> str | None:
    # transformers' patch: the legacy "type" key is rope_type (vLLM: "no need to consider 'type'")
    kind = rope.get("rope_type") or rope.get("type")
    return str(kind) if kind else None


def vllm_derived_max_model_len(model: ModelSpec) -> int | None:
    """vLLM's derived max_model_len (module docstring); None where config.json states no length."""
    derived: float | None = model.max_position_embeddings
    if not derived:
        return None
    rope = _rope_scaling(model)
    kind = _rope_type(rope)
    if kind and "gemma3" not in model.family and kind not in ("su", "longrope", "llama3"):
        if kind == "yarn" and rope.get("original_max_position_embeddings"):
            derived = float(rope["original_max_position_embeddings"])
        derived = derived * float(rope.get("factor") or 1.0)
    return int(derived)


def sglang_derived_context_length(model: ModelSpec) -> int | None:
    """SGLang's derived context_length (module docstring); None where config.json states no length."""
    if not model.max_position_embeddings:
        return None
    rope = _rope_scaling(model)
    factor = float(rope.get("factor") or 1) if rope else 1.0
    if "original_max_position_embeddings" in rope or _rope_type(rope) == "llama3":
        factor = 1.0
    return int(factor * model.max_position_embeddings)


def _yarn_way(model: ModelSpec, ctx: int, flag: str) -> str:
    """The override that stretches positions far enough (the same YaRN runtimes/published.py's warning gives)."""
    trained = model.max_position_embeddings or ctx
    factor = -(-ctx // trained)
    override = json.dumps({"rope_scaling": {"rope_type": "yarn", "factor": factor,
                                            "original_max_position_embeddings": trained}})
    return f"{flag} '{override}' (YaRN ×{factor}: {trained:,} × {factor} = {trained * factor:,} tokens)"


def vllm_context_refusal(model: ModelSpec, ctx: int | None) -> str | None:
    """vLLM's start-up refusal for a --max-model-len past its derived length; None within it."""
    derived = vllm_derived_max_model_len(model)
    if not ctx or not derived or ctx <= derived:
        return None
    return (f"vLLM refuses to start: \"User-specified max_model_len ({ctx}) is greater than the derived max_model_len "
            f"(max_position_embeddings={derived} or model_max_length=None in model's config.json). … To allow "
            f"overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\" (vllm/config/model.py "
            f"_get_and_verify_max_len). No number of GPUs changes it: lower --max-model-len to {derived:,}, or "
            f"stretch the positions with {_yarn_way(model, ctx, '--hf-overrides')}, or set "
            f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (past the trained positions RoPE gives nan, vLLM warns)")


def sglang_context_refusal(model: ModelSpec, ctx: int | None) -> str | None:
    """SGLang's start-up refusal for a --context-length past its derived length; None within it."""
    derived = sglang_derived_context_length(model)
    if not ctx or not derived or ctx <= derived:
        return None
    return (f"SGLang refuses to start: \"User-specified context_length ({ctx}) is greater than the derived "
            f"context_length ({derived}). This may lead to incorrect model outputs or CUDA errors. … To allow "
            f"overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1\" "
            f"(srt/configs/model_config.py _derive_context_length). No number of GPUs changes it: lower "
            f"--context-length to {derived:,}, or stretch the positions with "
            f"{_yarn_way(model, ctx, '--json-model-override-args')}, or set "
            f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
