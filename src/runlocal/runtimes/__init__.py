"""One module per inference engine; ``get_runtime`` maps the names users type to a planner."""

from __future__ import annotations

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


def get_runtime(name: str) -> Runtime:
    key = _NAMES.get(name.strip().lower())
    if key == "llamacpp":
        from .llamacpp import LlamaCpp

        return LlamaCpp()
    if key == "vllm":
        from .vllm import VLLM

        return VLLM()
    if key == "ollama":
        from .ollama import Ollama, from_environment

        return Ollama(**from_environment())
    if key in _CLASSES:
        import importlib

        module, cls = _CLASSES[key]
        return getattr(importlib.import_module(f".{module}", __name__), cls)()
    raise InputError(f"runtime: unknown runtime '{name}' (expected one of {', '.join(runtime_names())})")


__all__ = ["Allocation", "DeviceMemory", "Runtime", "Settings", "Step", "Target", "get_runtime", "runtime_aliases",
           "runtime_names"]
