"""One module per inference engine; ``get_runtime`` maps the names users type to a planner."""

from __future__ import annotations

from ..errors import InputError
from .base import Allocation, DeviceMemory, Runtime, Settings, Step, Target

_NAMES = {
    "llama.cpp": "llamacpp", "llamacpp": "llamacpp", "llama-cpp": "llamacpp", "llama-server": "llamacpp",
    "llama_cpp": "llamacpp",
    "vllm": "vllm",
}


def runtime_names() -> list[str]:
    return ["llama.cpp", "vllm"]


def get_runtime(name: str) -> Runtime:
    key = _NAMES.get(name.strip().lower())
    if key == "llamacpp":
        from .llamacpp import LlamaCpp

        return LlamaCpp()
    if key == "vllm":
        from .vllm import VLLM

        return VLLM()
    raise InputError(f"runtime: unknown runtime '{name}' (expected one of {', '.join(runtime_names())})")


__all__ = ["Allocation", "DeviceMemory", "Runtime", "Settings", "Step", "Target", "get_runtime", "runtime_names"]
