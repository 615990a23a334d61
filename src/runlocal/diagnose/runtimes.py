"""Which runtime a log comes from: the tokens that name a runtime (its own name, its function names, its log prefixes,
flags and file names), the order in which runtimes that embed another's lines win, and the names users give a runtime.
Split from classify.py (session 11, diagnose21) to keep it under ~800 lines; the rules are unchanged, and classify
re-exports ``normalize_runtime``."""

from __future__ import annotations

import re

from .extract import trie_regex
from .phase import oom_clause

__all__ = ["GGML_RUNTIMES", "RUNTIME_ORDER", "RUNTIME_TOKENS", "most_named", "named_in", "normalize_runtime",
           "runtime_of_oom_clause"]

# runtime detection: tokens that name a runtime, and which runtime wins when a log shows several
RUNTIME_TOKENS = {
    "ollama": "ollama", "llama runner": "ollama", "lmstudio": "lmstudio", "lm studio": "lmstudio",
    "vllm": "vllm", "enginecore": "vllm", "mqllmengine": "vllm", "async_llm_engine": "vllm",
    "sglang": "sglang", "sgl_jax": "sglang", "mem-fraction-static": "sglang", "mem_fraction_static": "sglang",
    "text-generation-launcher": "tgi", "text_generation_server": "tgi",
    "tensorrt_llm": "tensorrt-llm", "trt-llm": "tensorrt-llm", "trtllm-build": "tensorrt-llm",
    "mlx_": "mlx", "mlx-": "mlx", "omlx": "mlx",  # oMLX, an MLX server
    # MLX's Metal namespace ("[metal::malloc]", "mlx::core::metal::…"), not one whose name only ends in "metal::"
    # (Tenstorrent's tt::tt_metal::, which is not Apple's Metal)
    "[metal::": "mlx", ":metal::": "mlx", " metal::": "mlx",
    # MLX's own error words without the namespace: a failed command buffer ("[METAL] Command buffer execution failed:",
    # mlx/backend/metal/device.cpp; llama.cpp's Metal backend says "command buffer N failed with status N") and its
    # allocator's refusal ("[malloc] Unable to allocate", "[malloc_or_wait]" before 2025; mlx/backend/metal/allocator.cpp)
    "[metal] command buffer execution failed": "mlx", "[malloc] unable to allocate": "mlx", "[malloc_or_wait]": "mlx",
    "llama_model": "llama.cpp", "llama_new_context": "llama.cpp", "llama_init": "llama.cpp",
    "llama_context": "llama.cpp", "llama_kv_cache": "llama.cpp", "llama_decode": "llama.cpp",
    "llama_perf": "llama.cpp", "llama_graph": "llama.cpp", "llama_load": "llama.cpp", "ggml_": "llama.cpp",
    "llm_load": "llama.cpp", "load_tensors": "llama.cpp", ".gguf": "llama.cpp", "llama-server": "llama.cpp",
    "llama-cli": "llama.cpp", "llama.cpp": "llama.cpp", "llama_cpp": "llama.cpp", "koboldcpp": "llama.cpp",
    "llamafile": "llama.cpp", "gpt4all": "llama.cpp", "blk.": "llama.cpp",  # GGUF tensor names
    "[llama-cpp]": "llama.cpp", "llama-cpp-fallback": "llama.cpp",  # LocalAI's llama.cpp backends, as its log names them
    "transformers": "transformers", "from_pretrained": "transformers", "accelerate": "transformers",
    "bitsandbytes": "transformers", "mistralrs": "mistral.rs", "mistral.rs": "mistral.rs",
    # a Python traceback through transformers' GenerationMixin.generate ("out = model.generate(**inputs, …)"):
    # a program on transformers, whose OOM is PyTorch's under it (review17 §13; llava-1541, textgen-963 in the corpus)
    "model.generate(": "transformers",
    # a runtime not named, guessed from its log prefix, flags and file names: Ollama's Go slog lines
    # ("time=… level=INFO source=server.go:…"), vLLM's engine modules, TensorRT-LLM's "[TensorRT-LLM]" prefix,
    # llama.cpp's GPU-layers flag and its old GGML file names
    "level=info source=": "ollama", "level=warn source=": "ollama", "level=error source=": "ollama",
    "level=debug source=": "ollama", "llm_engine": "vllm", "[tensorrt-llm]": "tensorrt-llm",
    "-ngl ": "llama.cpp", "--n-gpu-layers": "llama.cpp", "n_gpu_layers": "llama.cpp", "ggmlv3": "llama.cpp",
    "ggml-model": "llama.cpp",
    # PyTorch's own tail under a CUDA error ("CUDA kernel errors might be asynchronously reported at some other API
    # call", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1", c10/cuda/CUDAException.cpp): a Python program
    # on PyTorch printed the "CUDA error: out of memory" above it, not ggml's CUDA_CHECK (counted as transformers,
    # the runtime that stands for plain PyTorch here)
    "asynchronously reported": "transformers", "cuda_launch_blocking": "transformers",
    "torch_use_cuda_dsa": "transformers",
}
_RUNTIME_RE = re.compile(trie_regex(RUNTIME_TOKENS))
# the runtimes' own names (a word, not a prefix of function names): counted only where no letter or digit comes right
# before them
_NAMES = frozenset({"ollama", "vllm", "sglang", "lmstudio", "koboldcpp", "llamafile", "gpt4all", "mistralrs"})
# mlx-lm's refusal of a config.json model_type it has no module for: _get_classes in mlx_lm/utils.py catches the
# ImportError of mlx_lm.models.<type> and raises ValueError(f"Model type {model_type} not supported.") (at
# ml-explore/mlx-lm d78bf58, 2026-08-22; mlx-vlm's and mlx-audio's loaders raise the same words): the bare line names
# MLX (ml-explore/mlx-lm#994 "Model type qwen3_5 not supported.", lmstudio-ai/mlx-engine#320). transformers says
# "has model type `x` but Transformers does not recognize this architecture", other loaders "is not supported"
_MLX_LOADER = re.compile(r"\bmodel type [\w.-]+ not supported\.")
# llama.cpp's release tags (b1697, b4704: github.com/ggml-org/llama.cpp/releases), as users quote them
_LLAMACPP_TAG = re.compile(r"\bb\d{4,5}\b")
# a name inside a file path: the word around it (letters, digits, _ . -) touches a slash ("/root/llama_model_weights/
# Q4/…" is the user's folder, not llama.cpp's llama_model_* functions, vLLM#2199)
_PATH_WORD = re.compile(r"[\w.-]*")


def _in_path(low: str, start: int, end: int) -> bool:
    """Whether the text at low[start:end] is part of a path component (its word touches a / or \\)."""
    left = start
    while left > 0 and (low[left - 1].isalnum() or low[left - 1] in "_.-"):
        left -= 1
    right = end + len(_PATH_WORD.match(low, end).group(0))  # type: ignore[union-attr]
    return (left > 0 and low[left - 1] in "/\\") or (right < len(low) and low[right] in "/\\")


# runtimes that embed another's log lines come first (Ollama prints llama.cpp's, vLLM imports transformers)
RUNTIME_ORDER = ("ollama", "vllm", "sglang", "tgi", "tensorrt-llm", "lmstudio", "mlx", "mistral.rs", "llama.cpp",
                  "transformers")
# runtimes whose CUDA errors come from ggml (LM Studio's GGUF engine is llama.cpp; its MLX engine prints no CUDA)
GGML_RUNTIMES = frozenset({"llama.cpp", "ollama", "lmstudio"})
_ALIASES = {
    "llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp", "llama-cpp-python": "llama.cpp",
    "llama-server": "llama.cpp", "koboldcpp": "llama.cpp", "llamafile": "llama.cpp",
    "gpt4all": "llama.cpp",  # GPT4All's backend is a llama.cpp fork (gpt4all-backend/llama.cpp-mainline)
    "hf": "transformers", "huggingface": "transformers", "accelerate": "transformers",
    "bitsandbytes": "transformers", "torch": "pytorch", "lm studio": "lmstudio", "lm-studio": "lmstudio",
    "trtllm": "tensorrt-llm", "tensorrt_llm": "tensorrt-llm", "trt-llm": "tensorrt-llm",
    "text-generation-inference": "tgi", "mlx-lm": "mlx", "mlx_lm": "mlx",
}


def normalize_runtime(runtime: str | None) -> str | None:
    if not runtime:
        return None
    r = runtime.strip().lower()
    return _ALIASES.get(r, r)


def named_in(low: str) -> list[str]:
    """The runtimes one lower-cased line names, once per naming token (a llama.cpp release tag counts as llama.cpp)."""
    tokens = _RUNTIME_RE.findall(low)
    if any(tok.startswith("llama_") or tok in _NAMES for tok in tokens):
        # llama.cpp's function names, unless in a path; a runtime's name inside a longer word is another name
        # ("VideoLLaMA2" holds "ollama": DAMO's video model, not Ollama)
        tokens = [m.group(0) for m in _RUNTIME_RE.finditer(low)
                  if not (m.group(0).startswith("llama_") and _in_path(low, m.start(), m.end()))
                  and not (m.group(0) in _NAMES and m.start() and low[m.start() - 1].isalnum())]
    return ([RUNTIME_TOKENS[tok] for tok in tokens] + ["llama.cpp" for _ in _LLAMACPP_TAG.findall(low)]
            + (["mlx"] if "model type" in low and _MLX_LOADER.search(low) else []))


def most_named(seen: dict[str, int]) -> str | None:
    """The runtime a log comes from, given how often each was named: Ollama if named at all (it embeds llama.cpp's
    lines), else the most-named one, where names of transformers count half (every Python runtime imports it)."""
    if not seen:
        return None
    if "ollama" in seen:
        return "ollama"
    weight = {r: c * (0.5 if r == "transformers" else 1.0) for r, c in seen.items()}
    return max(weight, key=lambda r: (weight[r], -RUNTIME_ORDER.index(r)))


def runtime_of_oom_clause(low: str) -> str | None:
    """The one runtime named in the clause of a line that says memory ran out, None when it names none or several.
    A writer comparing runtimes names the one that failed where they say it failed ("Ollama can easily handle 180K
    tokens of context, transformers still crashes due to OOM", transformers#45229): that runtime, not the one the
    log names most, ran out of memory (round 27's tuning, session 11, diagnose23)."""
    clause = oom_clause(low)
    named = set(named_in(clause)) if clause is not None else set()
    return named.pop() if len(named) == 1 else None
