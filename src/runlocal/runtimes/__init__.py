"""One module per inference engine; ``get_runtime`` maps the names users type to a planner."""

from __future__ import annotations

from typing import Mapping

from ..errors import InputError
from .base import RUNTIME_ALIASES, Allocation, DeviceMemory, Runtime, Settings, Step, Target

_NAMES = RUNTIME_ALIASES
_CLASSES = {"ollama": ("ollama", "Ollama"), "sglang": ("sglang", "SGLang"),
            "transformers": ("transformers", "Transformers"), "mlx": ("mlx", "MLX")}


def runtime_names() -> list[str]:
    return ["llama.cpp", "vllm", "ollama", "sglang", "transformers", "mlx"]


def runtime_aliases() -> list[str]:
    """Every name ``get_runtime`` accepts (lower case): the six engines and their common spellings."""
    return list(_NAMES)


def get_runtime(name: str, environ: Mapping[str, str] | None = None) -> Runtime:
    """The planner for a runtime name. ``environ``: the server environment it reads (Ollama's OLLAMA_CONTEXT_LENGTH,
    OLLAMA_GPU_OVERHEAD), given by the caller that read it (check.py, once); None: the runtime's defaults, so
    planning stays a pure function of its arguments."""
    key = _NAMES.get(name.strip().lower())
    if key == "llamacpp":
        from .llamacpp import LlamaCpp

        return LlamaCpp()
    if key == "vllm":
        from .vllm import VLLM

        return VLLM()
    if key == "ollama":
        from .ollama import Ollama, from_environment

        return Ollama(**from_environment(environ if environ is not None else {}))
    if key in _CLASSES:
        import importlib

        module, cls = _CLASSES[key]
        return getattr(importlib.import_module(f".{module}", __name__), cls)()
    raise InputError(f"runtime: unknown runtime '{name}' (expected one of {', '.join(runtime_names())})")


__all__ = ["Allocation", "DeviceMemory", "Runtime", "Settings", "Step", "Target", "get_runtime", "runtime_aliases",
           "runtime_names"]
