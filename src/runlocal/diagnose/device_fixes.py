"""Fixes that depend on the GPU's vendor or driver rather than on the runtime: which tool lists the processes
holding a GPU, and Vulkan's per-allocation limit (a driver's cap on one buffer, not the card's memory).

Pure computation over the figures :mod:`.extract` reads; :mod:`.fixes` calls it.
"""

from __future__ import annotations

import re
from typing import Any

from . import ollama_fixes

# The tool that lists what holds a GPU, by vendor. NVIDIA: nvidia-smi. AMD: rocm-smi --showpids (ROCm SMI's
# "--showpids", its man page in rocm-smi 5.x) or amd-smi, which replaces it (AMD SMI CLI docs: "intended to replace
# and deprecate the existing rocm_smi CLI tool"; its "process" command lists the processes on a GPU).
NVIDIA_PROCESSES = "nvidia-smi   # look for other processes first"
AMD_PROCESSES = "rocm-smi --showpids   # or: amd-smi process; look for other processes first"
_AMD_NAME = re.compile(r"\b(?:amd|radeon|instinct|mi\d{2,3}x?)\b|\bhip\b|\brocm\b", re.I)


def gpu_vendor(category: str, ex: dict[str, Any]) -> str:
    """'amd' for a ROCm/HIP failure or a GPU named as AMD's, else 'nvidia' (the CUDA categories)."""
    if category == "rocm_oom":
        return "amd"
    named = " ".join(str(ex.get(k) or "") for k in ("gpu_name", "device"))
    return "amd" if _AMD_NAME.search(named) else "nvidia"


def processes_command(category: str, ex: dict[str, Any]) -> str:
    """The command that shows which processes hold the GPU, for the failure's vendor."""
    return AMD_PROCESSES if gpu_vendor(category, ex) == "amd" else NVIDIA_PROCESSES


# -- Vulkan: one buffer above the driver's per-allocation limit --------------------------------------------------
# ggml-vulkan.cpp ggml_vk_create_buffer: `if (size > device->max_memory_allocation_size) throw
# vk::OutOfDeviceMemoryError("Requested buffer size exceeds device memory allocation limit")`, where
# max_memory_allocation_size = min(VkPhysicalDeviceMaintenance3Properties::maxMemoryAllocationSize,
# Maintenance4's maxBufferSize), or GGML_VK_FORCE_MAX_ALLOCATION_SIZE. Since llama.cpp PR #16354 (2025-09-30) the
# check is against maxBufferSize and says "device buffer size limit". It is a cap on one allocation, whatever the card
# holds: a 2 GiB compute buffer fails on a 16 GB card (llama.cpp#12728). Builds split what they allocate into pieces
# below the cap: weights and the KV cache into blocks of at most 1 GiB since PR #11551 (2025-02,
# GGML_VK_SUBALLOCATION_BLOCK_SIZE), the compute graph's buffer into chunks since PR #15815 (2025-09).
# A pinned host buffer over the same limit ("Failed to allocate pinned memory (…)") is only a warning: ggml falls back
# to plain host memory, so it is not read as the cap here (extract.py).
VK_LIMIT_COMMAND = 'vulkaninfo | grep -iE "maxMemoryAllocationSize|maxBufferSize"   # the cap, per GPU'
DEFAULT_UBATCH = 512   # llama.cpp's default -ub (common/common.h n_ubatch); Ollama's num_batch too (api/types.go)
# An Ollama log's fixes are Ollama's settings, never llama-server flags: per-model options as PARAMETER lines of a
# Modelfile (ollama_fixes.modelfile; num_batch is -ub, num_gpu -ngl, num_ctx × OLLAMA_NUM_PARALLEL the -c / n_ctx
# the log prints: ollama_fixes' docstring cites where).


def vulkan_cap_fixes(ex: dict[str, Any], ollama: bool = False) -> list[dict[str, str]]:
    """One Vulkan allocation above the driver's per-allocation cap: what to shrink depends on which buffer it was
    (the compute buffer: the micro-batch; the KV cache: the context; the weights: the layers on that GPU), and a
    build older than the splitting PRs gains from an update. The cap is not in the log: vulkaninfo prints it.
    ``ollama``: the log is Ollama's, so each knob is its option (fixes.py tells)."""
    limit = ex.get("vk_allocation_cap_exceeded")
    size = ex.get("vk_failed_allocation_bytes") or ex.get("requested_bytes")
    if not limit or not size:
        return []
    from ..units import format_bytes

    size_s = format_bytes(int(size))
    # the "device buffer size limit" wording is PR #16354's (2025-09-30), later than both splitting PRs: such a
    # build already splits its buffers, so the one that failed holds a single tensor over the limit
    splits = limit == "maxBufferSize"
    fixes = [{"title": f"One {size_s} Vulkan allocation is over the per-allocation limit, not over the card's memory",
              "command": VK_LIMIT_COMMAND,
              "effect": f"ggml_vulkan refused one buffer of {size_s} because it is above the driver's {limit} (often "
                        "2 or 4 GiB; ggml-vulkan.cpp ggml_vk_create_buffer), a cap on one allocation whatever the card "
                        "holds; raising GGML_VK_FORCE_MAX_ALLOCATION_SIZE past the driver's cap fails later instead "
                        "(llama.cpp#13024)"}]
    fixes += _which_buffer(ex, size_s, splits, ollama)
    if not splits:
        since = ("weights and KV cache in ≤ 1 GiB blocks since PR #11551 (2025-02), compute buffers in chunks since "
                 "PR #15815 (2025-09)")
        fixes.append(ollama_fixes.update_fix(f"llama.cpp splits {since}") if ollama else
                     {"title": "Use a newer llama.cpp build: it splits its buffers below the limit",
                      "command": f"llama-server --version   # {since}",
                      "effect": "builds since then place each buffer in pieces under the cap, so only a single "
                                "tensor larger than the cap can still fail"})
    return fixes


# the knowledge base's fixes that read a failed allocation as the card being full (fewer layers, a split over GPUs, a
# smaller file): beside a per-allocation cap they mislead, so they give way to the cap's own fixes
_CAPACITY_KNOBS = frozenset({"-ngl", "--n-gpu-layers", "--tensor-split", "-ts", "--split-mode", "-sm"})
_CAPACITY_WORDS = ("Q4_K_M", "num_gpu", "SMALLER_TAG", "--gpu ")
# the knobs that shrink each buffer (fixes._flags' names; an Ollama option or variable reads as the flag it sets):
# the compute buffer holds one micro-batch's activations and, without flash attention, its KQ scores over n_ctx
# cells (-ub, -b, -fa, -c, -np: -c is n_ctx, and Ollama's n_ctx is num_ctx × OLLAMA_NUM_PARALLEL); the KV cache
# grows with n_ctx and its type's bytes; a weights buffer only with fewer layers or bits (the capacity knobs above)
_SHRINKS = {
    "compute": frozenset({"-ub", "--ubatch-size", "-b", "--batch-size", "-fa", "--flash-attn", "-c", "--ctx-size",
                          "-np", "--parallel"}),
    "kv": frozenset({"-c", "--ctx-size", "-np", "--parallel", "--cache-type-k", "--cache-type-v", "-ctk", "-ctv"}),
    "weights": frozenset(),
}
# a context a command sets: Ollama's num_ctx (one sequence's: n_ctx / n_seq_max), or llama-server's -c (n_ctx)
_CONTEXT_VALUE = re.compile(r"(?:OLLAMA_CONTEXT_LENGTH=|num_ctx\W+)(\d+)|(?<!\S)(?:-c|--ctx-size)[ =](\d+)")


def failed_buffer(ex: dict[str, Any]) -> str | None:
    """Which buffer went over the cap, as the line after it says: 'compute', 'kv', 'weights' or None."""
    return next((b for b, key in (("compute", "compute_alloc_failed"), ("kv", "kv_alloc_failed"),
                                  ("weights", "weights_alloc_failed")) if ex.get(key)), None)


def reads_cap_as_capacity(command: str, flags: frozenset[str], cap_flags: frozenset[str],
                          ex: dict[str, Any] | None = None) -> bool:
    """Whether a knowledge-base fix is for a full card (or turns a knob the cap's fixes already set, ``cap_flags``
    less -m) rather than for one buffer over a per-allocation cap; with the log's figures ``ex``, also one whose
    every knob leaves the buffer that failed as large (OLLAMA_MAX_LOADED_MODELS, flash attention for a KV cache), or
    whose context is not below the one that failed."""
    if flags & _CAPACITY_KNOBS or any(w in command for w in _CAPACITY_WORDS) or flags & (cap_flags - {"-m"}):
        return True
    buffer = failed_buffer(ex or {})
    if buffer is None or not flags:
        return False
    if not flags & _SHRINKS[buffer]:
        return True
    ctx, n_ctx = _CONTEXT_VALUE.search(command), (ex or {}).get("n_ctx")
    if not (ctx and n_ctx):
        return False
    per_seq = ctx.group(1) is not None
    return int(ctx.group(1) or ctx.group(2)) >= int(n_ctx) // (int((ex or {}).get("n_seq_max") or 1) if per_seq else 1)


def _which_buffer(ex: dict[str, Any], size_s: str, splits: bool, ollama: bool = False) -> list[dict[str, str]]:
    """The knob that shrinks the buffer that failed, named by the line after it (``splits``: the build already
    splits its buffers, so the one that failed is a single tensor; ``ollama``: the log is Ollama's, so the knob is
    its option, set in a Modelfile)."""
    gguf = ollama_fixes.gguf_name(ex)
    if ex.get("compute_alloc_failed"):
        ub = int(ex.get("n_ubatch") or DEFAULT_UBATCH)
        half = max(ub // 2, 1)
        knob, command = ollama_fixes.set_option("num_batch", half, f"batch{half}", ollama, ex)
        return [{"title": f"Halve the micro-batch: {knob}",
                 "command": command,
                 "effect": f"the {size_s} buffer is {'one tensor of ' if splits else ''}the compute buffer, whose "
                           f"activations grow with the tokens of one micro-batch ({ub}"
                           f"{' as the log states' if ex.get('n_ubatch') else ', the default'}"
                           f"{'; Ollama passes num_batch as -ub' if ollama else ''}); halve again until it "
                           "is under the limit"}]
    if ex.get("kv_alloc_failed"):
        n_ctx = ex.get("n_ctx")
        # Ollama's n_ctx is num_ctx × its parallel sequences: the num_ctx to set is half of one sequence's
        ctx_half = f"{int(n_ctx) // (int(ex.get('n_seq_max') or 1) if ollama else 1) // 2}" if n_ctx else "N"
        said = f"n_ctx {int(n_ctx):,} as the log states" if n_ctx else "the log does not state n_ctx"
        unknown = "" if n_ctx else f"   # N: half the {'num_ctx' if ollama else '-c'} that failed"
        return [{"title": "Halve the context: the KV cache is one allocation in this build",
                 "command": ollama_fixes.set_option("num_ctx", ctx_half, "smaller", ollama, ex)[1] + unknown,
                 "effect": f"the {size_s} buffer is the KV cache, which grows with the context ({said}); it must "
                           "come under the limit vulkaninfo prints"}]
    if ex.get("weights_alloc_failed") and splits:
        return [{"title": "Use a smaller quantization: one weight tensor is over the limit",
                 "command": "ollama pull MODEL:SMALLER_TAG   # a smaller quantization of the model" if ollama
                 else f"llama-server -m {gguf.replace('.gguf', '-Q4_K_M.gguf')}   # a smaller file of the model",
                 "effect": f"this build places weights in blocks under the limit, so the {size_s} allocation is a "
                           "single tensor (an embedding or output matrix), which only fewer bits per weight shrink"}]
    if ex.get("weights_alloc_failed"):
        layers = ex.get("layers_offloaded") or ex.get("n_gpu_layers")
        now = f"{int(layers)}" if layers else "the layers now on it"
        bound = f"   # N ≤ {now} × the limit ÷ {size_s}"
        return [{"title": "If this build puts that GPU's weights in one buffer: keep fewer layers on it",
                 "command": ollama_fixes.set_option("num_gpu", "N", "fewer-layers", ollama, ex)[1] + bound,
                 "effect": f"the {size_s} buffer holds weights; a build that allocates a GPU's weights as one buffer "
                           "shrinks it with each layer kept on the CPU, while one tensor over the limit needs a "
                           "smaller quantization"}]
    return []
