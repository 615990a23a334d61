"""vLLM's CPU backend (``vllm serve`` with no GPU): the KV cache space it allocates and the refusal of its own.

vllm/platforms/cpu.py check_and_update_config (v0.8–v0.11): the KV cache is VLLM_CPU_KVCACHE_SPACE GiB (vllm/envs.py),
"not set, using 4 by default"; RAM is not shared out by --gpu-memory-utilization, and there are no CUDA graphs or
NCCL workspaces. Set, the request's cpu_kvcache_space (VLLMOptions; check.py reads the variable).
"""

from __future__ import annotations

from ..units import GiB
from .base import Step

CPU_KVCACHE_SPACE = 4 << 30


def cpu_kv_space(set_gib: int | None) -> int:
    """Bytes of KV cache the CPU backend allocates: VLLM_CPU_KVCACHE_SPACE GiB, 4 GiB when unset."""
    return (set_gib or 0) * GiB or CPU_KVCACHE_SPACE


def kv_space_step(cpu_space: int, set_gib: int | None) -> Step:
    """The --explain step that stands for the GPU's budget on the CPU backend."""
    return Step("KV cache space", (f"VLLM_CPU_KVCACHE_SPACE={set_gib} (set)" if set_gib else
                                   f"VLLM_CPU_KVCACHE_SPACE unset: {CPU_KVCACHE_SPACE // GiB} GiB")
                + " (RAM is not shared out by --gpu-memory-utilization on the CPU backend)", f"{cpu_space:,} B",
                "vllm/envs.py; vllm/platforms/cpu.py check_and_update_config")


def cpu_fp8_kv_refusal(v0_engine: bool, cpu_space: int | None, cache_type: str) -> str | None:
    """vllm/platforms/cpu.py check_and_update_config (v0.8 on): chunked prefill or prefix caching (both on by default
    in V1) with a quantized KV cache raises; where it passes, later releases fall back to the model's dtype anyway."""
    if cpu_space is None or v0_engine or cache_type in ("f16", "bf16", "auto"):
        return None
    return ("Chunked-prefill and prefix-cache on the CPU backend is not compatible with FP8 KV cache "
            f"(--kv-cache-dtype {cache_type}: vLLM's CPU backend refuses it)")
