"""One module per inference engine; ``get_runtime`` maps the names users type to a planner."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InputError
from .base import Allocation, DeviceMemory, Runtime, Settings, Step, Target
from .registry import BY_NAME, ENGINES, Engine, engine, find_engine


def runtime_names() -> list[str]:
    return [e.name for e in ENGINES]


def runtime_aliases() -> list[str]:
    """Every name ``get_runtime`` accepts (lower case): the six engines and their common spellings."""
    return list(BY_NAME)


def get_runtime(name: str, environ: Mapping[str, str] | None = None) -> Runtime:
    """The planner for a runtime name. ``environ``: the server environment it reads (Ollama's OLLAMA_CONTEXT_LENGTH,
    OLLAMA_GPU_OVERHEAD), given by the caller that read it (check.py, once); None: the runtime's defaults, so
    planning stays a pure function of its arguments."""
    from .versions import split_runtime

    base, version_text = split_runtime(name)    # 'vllm==0.19.0': that release's rules (runtimes/versions.py)
    entry = find_engine(base)
    if entry is None:
        raise InputError(f"runtime: unknown runtime '{name}' (expected one of {', '.join(runtime_names())}, "
                         "optionally ==VERSION)")
    runtime = _planner(entry, environ)
    return _versioned(runtime, version_text) if version_text is not None else runtime


def _planner(entry: Engine, environ: Mapping[str, str] | None) -> Runtime:
    import importlib

    module, cls = entry.planner.split(":")
    planner = getattr(importlib.import_module(f".{module}", __name__), cls)
    if entry.server_environment:   # Ollama: OLLAMA_CONTEXT_LENGTH, OLLAMA_GPU_OVERHEAD … as the caller read them
        from .ollama import from_environment

        return planner(**from_environment(environ if environ is not None else {}))
    return planner()


def _versioned(runtime: Runtime, version_text: str) -> Runtime:
    """The planner with the named release's rules; ``version`` and ``rules`` say which (runtimes/versions.py)."""
    from . import versions

    version = versions.parse_version(runtime.name, version_text)
    if runtime.name == "vllm":
        runtime.engine, rules = versions.vllm_engine(version)   # type: ignore[attr-defined]
    elif runtime.name == "sglang":
        from .sglang_versions import sglang_rules

        runtime.release_rules = sglang_rules(version.key, version.text)   # type: ignore[attr-defined]
        rules = runtime.release_rules.words()   # type: ignore[attr-defined]
    elif runtime.name == "mlx":
        from .mlx_versions import mlx_rules

        runtime.release_rules = mlx_rules(version.key, version.text)   # type: ignore[attr-defined]
        rules = runtime.release_rules.words()   # type: ignore[attr-defined]
    elif runtime.name == "transformers":
        from .transformers_versions import transformers_rules

        runtime.release_rules = transformers_rules(version.key, version.text)   # type: ignore[attr-defined]
        runtime.attn_implementation = runtime.release_rules.attn_default   # type: ignore[attr-defined]
        rules = runtime.release_rules.words()   # type: ignore[attr-defined]
    elif runtime.name == "llama.cpp":
        runtime.np_auto, runtime.has_fit, rules = versions.llamacpp_rules(version)   # type: ignore[attr-defined]
        runtime.output_cap = versions.llamacpp_output_cap(version)   # type: ignore[attr-defined]
        runtime.kq_mask_f16 = versions.llamacpp_kq_mask_f16(version)   # type: ignore[attr-defined]
        runtime.gdn = versions.llamacpp_gdn(version)   # type: ignore[attr-defined]
        runtime.fa_auto = versions.llamacpp_fa_auto(version)   # type: ignore[attr-defined]
        runtime.mla_cache, runtime.mla_cache_why = versions.llamacpp_mla_cache(version)   # type: ignore[attr-defined]
    else:
        runtime.ctx_rule, rules = versions.ollama_rules(version)   # type: ignore[attr-defined]
        runtime.output_cap = versions.ollama_output_cap(version)   # type: ignore[attr-defined]   # by its build
        runtime.kq_mask_f16 = versions.ollama_kq_mask_f16(version)   # type: ignore[attr-defined]   # likewise
        runtime.gdn = versions.ollama_gdn(version)   # type: ignore[attr-defined]   # likewise
        runtime.mla_cache, runtime.mla_cache_why = versions.ollama_mla_cache(version)   # type: ignore[attr-defined]
        runtime._llama.kernel_build = versions.ollama_speed_build(version)[0]   # type: ignore[attr-defined]
    runtime.version, runtime.rules = version.text, rules   # type: ignore[attr-defined]
    return runtime


def runtime_rules(runtime: Runtime) -> tuple[str, str]:
    """(version asked or "current", the rules the planner applies) for a plan's step and JSON."""
    from . import versions

    asked = getattr(runtime, "version", None)
    if asked is not None:
        return asked, getattr(runtime, "rules", "")
    if runtime.name == "vllm":
        return "current", versions.vllm_engine(None)[1]
    if runtime.name == "llama.cpp":
        return "current", versions.llamacpp_rules(None)[2]
    if runtime.name == "ollama":
        return "current", versions.ollama_rules(None)[1]
    if runtime.name == "sglang":
        from .sglang_versions import sglang_rules

        return "current", sglang_rules(None).words()
    if runtime.name == "transformers":
        from .transformers_versions import transformers_rules

        return "current", transformers_rules(None).words()
    if runtime.name == "mlx":
        from .mlx_versions import mlx_rules

        return "current", mlx_rules(None).words()
    return "current", f"{runtime.name}: the release the planner models"


__all__ = ["ENGINES", "Allocation", "DeviceMemory", "Engine", "Runtime", "Settings", "Step", "Target", "engine",
           "find_engine", "get_runtime", "runtime_aliases", "runtime_names", "runtime_rules"]
