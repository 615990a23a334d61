"""Say when the runtime behind a diagnosis is not named in the text: no runtime at all (the knowledge base's commands
are then one runtime's, the first its fix names), or only PyTorch's CUDA error tail, which the detection counts as
transformers (runtimes.RUNTIME_TOKENS) though any PyTorch program prints it. The answer keeps its fixes; each command
written for one runtime says whose it is, and the diagnosis carries a ``runtime_note``.

Pure computation over the diagnosis and its extracted figures; :func:`.fixes.with_computed_fixes` calls it.
"""

from __future__ import annotations

from typing import Any

from . import kb

RUNTIME_NAMES = {"vllm": "vLLM", "llama.cpp": "llama.cpp", "ollama": "Ollama", "sglang": "SGLang",
                 "transformers": "transformers", "mlx": "MLX", "lmstudio": "LM Studio", "tgi": "TGI",
                 "tensorrt-llm": "TensorRT-LLM", "pytorch": "PyTorch", "mistral.rs": "mistral.rs"}
# the key extract.py sets when the text names transformers itself (not only PyTorch's error tail)
NAMED_KEY = "transformers_named"


def _display(runtime: str) -> str:
    return RUNTIME_NAMES.get(runtime, runtime)


def guessed_runtime(extracted: dict[str, Any], given: str | None) -> tuple[bool, str | None]:
    """(whether the runtime is not named in the text, the runtime the fixes were written for). ``given`` is the
    runtime the user passed (then nothing is a guess). Pops the extractor's private key."""
    named_transformers = bool(extracted.pop(NAMED_KEY, False))
    if given:
        return False, given
    detected = extracted.get("runtime")
    if detected is None:
        return True, None
    return detected == "transformers" and not named_transformers, detected


def note(detected: str | None, first: str | None) -> str:
    """The sentence that says the runtime is a guess (``first``: whose commands were shown, when none is named)."""
    retry = "`runlocal diagnose --runtime NAME` gives the commands for yours"
    if detected == "transformers":
        return ("transformers is a guess: the text names no runtime, only PyTorch's CUDA error tail "
                f"(\"CUDA_LAUNCH_BLOCKING\", errors \"asynchronously reported\"), which any PyTorch program prints; {retry}")
    return f"the text names no runtime: commands written for one runtime are {_display(first or '?')}'s; {retry}"


def _command_key(sol: kb.Solution, runtime: str | None) -> str | None:
    """The commands key whose command the solution gives for ``runtime`` (kb.Solution.command_for's choice)."""
    if runtime is None:
        return next(iter(sol.commands), None)
    if runtime in sol.commands:
        return runtime
    return "any" if "any" in sol.commands else next(iter(sol.commands), None)


def mark_guessed(fixes: list[dict[str, str]], entry: kb.Entry | None, runtime: str | None) -> str | None:
    """Append to each knowledge-base fix written for one runtime whose command it is (in place); the first such
    runtime, or None when every command is for any runtime."""
    if entry is None:
        return None
    whose = {s.title: _command_key(s, runtime) for s in entry.solutions}
    first = None
    for i, f in enumerate(fixes):
        key = whose.get(f["title"])
        if not key or key == "any" or not f.get("command"):
            continue
        first = first or key
        said = f"{_display(key)}'s command (the text names no runtime)"
        fixes[i] = dict(f, effect=f"{f['effect']}; {said}" if f.get("effect") else said)
    return first
