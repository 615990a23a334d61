"""Say when the runtime behind a diagnosis is not named in the text: no runtime at all (the knowledge base's commands
are then one runtime's, the first its fix names) and a message several runtimes print, or only PyTorch's CUDA error
tail, which the detection counts as transformers (runtimes.RUNTIME_TOKENS) though any PyTorch program prints it. The
answer keeps its fixes; each command written for one runtime says whose it is, and the diagnosis carries a
``runtime_note``. A message only one runtime prints (the matched entry lists that runtime alone) names it: no note.

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


def entry_runtime(entry: kb.Entry | None) -> str | None:
    """The runtime whose own message the matched entry is (its ``runtimes`` lists that one alone: "The model's max
    seq len … KV cache" is vLLM's sentence, "model requires more system memory" Ollama's): the text then names its
    runtime as surely as a runtime word would. None for entries several runtimes (or any) print."""
    if entry is None or len(entry.runtimes) != 1 or entry.runtimes[0] not in RUNTIME_NAMES:
        return None
    return None if entry.runtimes[0] == "pytorch" else entry.runtimes[0]


def guessed_runtime(extracted: dict[str, Any], given: str | None,
                    entry: kb.Entry | None = None) -> tuple[bool, str | None]:
    """(whether the runtime is not named in the text, the runtime the fixes were written for). ``given`` is the
    runtime the user passed (then nothing is a guess); ``entry``, the matched knowledge-base entry, names it where
    only one runtime prints its message (entry_runtime). Pops the extractor's private key."""
    named_transformers = bool(extracted.pop(NAMED_KEY, False))
    if given:
        return False, given
    detected = extracted.get("runtime")
    own = entry_runtime(entry)
    if detected is None:
        return (False, own) if own else (True, None)
    if detected == "transformers" and not named_transformers and own:
        return False, own
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
    if entry is None or entry_runtime(entry) is not None:
        return None          # the entry is one runtime's own message: its commands are that runtime's, no guess
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
