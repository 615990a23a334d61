"""vLLM's CPU backend (``vllm serve`` with no GPU): the KV cache space it allocates and the refusals of its own.

The space is VLLM_CPU_KVCACHE_SPACE GiB where the variable is set (vllm/envs.py reads it with int(); the request's
cpu_kvcache_space, which check.py reads from the environment). Unset, three rules by release, read in the released
wheels (vllm/platforms/cpu.py get_device_total_memory / check_and_update_config, vllm/v1/worker/cpu_worker.py):

  ≤ 0.12.x   "fixed"      4 GiB: "Environment variable VLLM_CPU_KVCACHE_SPACE (GiB) for CPU backend is not set, using 4
                          by default" (v0.11.0 – v0.12.0 logged it so; issue #29233's ValueError "available KV cache
                          memory (4.00 GiB)").
  0.13 – 0.19 "half-node" int(psutil.virtual_memory().total // NUMA nodes × 0.5), DEFAULT_CPU_MEM_UTILIZATION = 0.5
                          (PR #29604, fixing issue #29233: first in v0.13.0, v0.12.0 still has the 4 GiB; v0.19.1 the
                          last with it), logged "VLLM_CPU_KVCACHE_SPACE not set. Using X GiB for KV cache."
  ≥ 0.20     "profiled"   CPUWorker.determine_available_memory: ceil(the NUMA node's MemTotal × --gpu-memory-utilization)
                          less the worker's RSS after warming the model up (PR #39781, 2026-04: v0.19.1 is without it,
                          v0.20.0 has it; the variable set becomes kv_cache_memory_bytes), logged "Auto set (X/Y) GiB for
                          KV cache on node N".

Tokens per KV block where --block-size is unset (vllm/platforms/cpu.py check_and_update_config, read in the wheels
of v0.11.0, 0.11.1, 0.12.0, 0.13.0, 0.19.1, 0.20.0, 0.21.0, 0.26.0–0.29.0, 0.31.0–0.33.0):

  ≤ 0.11.0   16           "cache_config.block_size = 128 if ipex_available else 16" (intel_extension_for_pytorch
                          installed: 128; without it any other --block-size raises)
  ≥ 0.11.1   128          "cache_config.block_size = 128" (0.33.0: update_block_size_for_backend, the backends'
                          preferred size from a default of 128)
  MLA models, ≥ 0.28.0: 16 ("CPU MLA backend requires block_size=16": csrc/cpu/mla_decode.cpp compiles for 16 only);
                          from 0.29.0 a CPU with AMX tiles runs AMX_MLA instead and keeps 128 (planned: no AMX).

Assumptions, said in the plan: one NUMA node holding all the RAM given (--ram; psutil's total is that less what the
kernel reserves), and the worker's RSS after warm-up taken as the weights plus the profiled activation peak (the
interpreter's and libraries' own resident memory is not counted, so the profiled space is an upper bound). RAM is
never shared out for CUDA graphs or NCCL workspaces on this backend.
"""

from __future__ import annotations

import math

from ..units import GiB
from .base import Step

CPU_KVCACHE_SPACE = 4 << 30          # v0.12 and older, unset
HALF_NODE_SHARE = 0.5                # v0.13 – v0.19: DEFAULT_CPU_MEM_UTILIZATION
# (first release, rule): the releases each rule was read in are in the module's docstring
CPU_KV_RULES: tuple[tuple[tuple[int, ...], str], ...] = (((0,), "fixed"), ((0, 13), "half-node"), ((0, 20), "profiled"))
CPU_KV_CURRENT = CPU_KV_RULES[-1][1]


# (first release, tokens per block) with --block-size unset; MLA models from CPU_MLA_BLOCK_FROM on take CPU_MLA_BLOCK
CPU_BLOCK_RULES: tuple[tuple[tuple[int, ...], int], ...] = (((0,), 16), ((0, 11, 1), 128))
CPU_MLA_BLOCK_FROM, CPU_MLA_BLOCK = (0, 28), 16


def cpu_block_size(version: str | None, mla: bool) -> tuple[int, str]:
    """Tokens per KV block vLLM's CPU backend picks in this release, and why (see the docstring); unversioned is the
    current release."""
    from .versions import parse_version

    key = parse_version("vllm", version).key if version else (1 << 30,)
    release = f"vLLM {version}" if version else "the current vLLM"
    if mla and key >= CPU_MLA_BLOCK_FROM:
        size, why = CPU_MLA_BLOCK, ("the CPU MLA kernel's only size from 0.28 on; a CPU with AMX tiles runs AMX_MLA "
                                    "at 128 from 0.29: planned without AMX")
    else:
        size = [size for first, size in CPU_BLOCK_RULES if key >= first][-1]
        why = "up to 0.11.0 without intel_extension_for_pytorch (128 with it)" if size == 16 else "0.11.1 on"
    return size, (f"block_size {size} on the CPU backend ({release}, --block-size unset: vllm/platforms/cpu.py "
                  f"check_and_update_config; {why})")


def cpu_kv_rule(version: str | None) -> str:
    """The rule that sizes an unset VLLM_CPU_KVCACHE_SPACE in this release ('fixed', 'half-node', 'profiled');
    unversioned is the current release."""
    if version is None:
        return CPU_KV_CURRENT
    from .versions import parse_version

    key = parse_version("vllm", version).key
    return [rule for first, rule in CPU_KV_RULES if key >= first][-1]


def cpu_kv_space(set_gib: int | None, rule: str, ram: int, utilization: float, resident: int) -> int:
    """Bytes of KV cache the CPU backend allocates (negative: the worker's own memory fills its reservation)."""
    if set_gib:
        return set_gib * GiB
    if rule == "fixed":
        return CPU_KVCACHE_SPACE
    if rule == "half-node":
        return int(ram * HALF_NODE_SHARE)
    return math.ceil(ram * utilization) - resident


def kv_space_step(cpu_space: int, set_gib: int | None, rule: str, ram: int, utilization: float,
                  resident: int) -> Step:
    """The --explain step that stands for the GPU's budget on the CPU backend."""
    if set_gib:
        how, where = f"VLLM_CPU_KVCACHE_SPACE={set_gib} (set)", "vllm/envs.py; vllm/platforms/cpu.py"
    elif rule == "fixed":
        how, where = (f"VLLM_CPU_KVCACHE_SPACE unset: {CPU_KVCACHE_SPACE // GiB} GiB (vLLM ≤ 0.12)",
                      "vllm/platforms/cpu.py get_device_total_memory")
    elif rule == "half-node":
        how, where = (f"VLLM_CPU_KVCACHE_SPACE unset: RAM {ram:,} B (one NUMA node) × {HALF_NODE_SHARE} "
                      "(vLLM 0.13–0.19)", "vllm/platforms/cpu.py get_device_total_memory (PR #29604)")
    else:
        how, where = (f"VLLM_CPU_KVCACHE_SPACE unset: ⌈RAM {ram:,} B (one NUMA node) × --gpu-memory-utilization "
                      f"{utilization}⌉ − the worker's memory {resident:,} B (weights + activation peak; vLLM ≥ 0.20)",
                      "vllm/v1/worker/cpu_worker.py determine_available_memory (PR #39781)")
    return Step("KV cache space", how + " (no CUDA graphs or NCCL workspaces on the CPU backend)",
                f"{cpu_space:,} B", where)


# CPUWorker.__init__'s start-up check (vllm/v1/worker/cpu_worker.py, read in the wheels of 0.20.0, 0.21.0, 0.26.0–0.29.0,
# 0.31.0, 0.32.0; gone in 0.33.0): with VLLM_CPU_KVCACHE_SPACE unset, ceil(MemTotal × --gpu-memory-utilization) above
# the node's available memory (vllm/utils/cpu_resource_utils.py get_memory_node_info: MemFree + Active(file) +
# Inactive(file) + SReclaimable, i.e. what is free now) raises before the model loads. [first, last + 1)
CPU_STARTUP_CHECK = ((0, 20), (0, 33))


def cpu_kv_refusal(version: str | None, set_gib: int | None, ram: int, available: int, utilization: float,
                   resident: int) -> str | None:
    """vLLM ≥ 0.20's CPU worker refusals (cpu_worker.py), in its words; None before 0.20 (a space the RAM cannot hold
    is the verdict's to judge there). ``available``: the RAM free now (the plan's capacity), of which the worker's
    memory ``resident`` (weights + activation peak) is taken before the KV cache is (determine_available_memory)."""
    if cpu_kv_rule(version) != "profiled":
        return None
    from .versions import parse_version

    key = parse_version("vllm", version).key if version else (1 << 30,)
    node = f"Available memory on node 0 ({available / GiB:.2f}/{ram / GiB:.2f} GiB)"
    requested = math.ceil(ram * utilization)
    if set_gib:
        # explicit: kv_cache_memory_bytes = N GiB against what the loaded worker leaves
        if set_gib * GiB > available - resident:
            return (f"{node[:-1]} after the worker's {resident / GiB:.2f} GiB) on kv cache allocation is less than "
                    f"requested memory for kv ({set_gib:.2f} GiB) (vLLM refuses to start; lower VLLM_CPU_KVCACHE_SPACE "
                    "or free RAM)")
        return None
    if CPU_STARTUP_CHECK[0] <= key < CPU_STARTUP_CHECK[1] and requested > available:
        return (f"{node} on startup is less than desired CPU memory utilization ({utilization}, "
                f"{requested / GiB:.2f} GiB) (vLLM refuses to start; lower --gpu-memory-utilization or free RAM)")
    if requested - resident <= 0:
        return (f"the worker already uses {resident / GiB:.2f} GiB (weights and runtime), more than the "
                f"{requested / GiB:.2f} GiB of CPU memory reserved for it (--gpu-memory-utilization "
                f"{utilization} of {ram / GiB:.2f} GiB), leaving none for the KV cache (vLLM refuses to start; raise "
                "--gpu-memory-utilization or set VLLM_CPU_KVCACHE_SPACE)")
    if requested > available:
        # the KV request (requested − RSS) against what the loaded worker leaves (available − RSS)
        return (f"{node[:-1]} after the worker's {resident / GiB:.2f} GiB) on kv cache allocation is less than "
                f"requested memory for kv ({(requested - resident) / GiB:.2f}/{requested / GiB:.2f} GiB) (vLLM "
                "refuses to start; lower --gpu-memory-utilization or free RAM)")
    return None


def cpu_fp8_kv_refusal(v0_engine: bool, cpu_space: int | None, cache_type: str) -> str | None:
    """vllm/platforms/cpu.py check_and_update_config (v0.8 on): chunked prefill or prefix caching (both on by default
    in V1) with a quantized KV cache raises; where it passes, later releases fall back to the model's dtype anyway."""
    if cpu_space is None or v0_engine or cache_type in ("f16", "bf16", "auto"):
        return None
    return ("Chunked-prefill and prefix-cache on the CPU backend is not compatible with FP8 KV cache "
            f"(--kv-cache-dtype {cache_type}: vLLM's CPU backend refuses it)")


def cpu_kv_note(version: str | None) -> str:
    """What an unset VLLM_CPU_KVCACHE_SPACE was planned as, for the plan's notes."""
    rule = cpu_kv_rule(version)
    release = f"vLLM {version}" if version else "the current vLLM"
    if rule == "fixed":
        return f"VLLM_CPU_KVCACHE_SPACE unset: {release} allocates 4 GiB of KV cache (releases up to 0.12)"
    if rule == "half-node":
        return (f"VLLM_CPU_KVCACHE_SPACE unset: {release} allocates half a NUMA node's RAM as KV cache (0.13–0.19, "
                "PR #29604); assumed: one NUMA node, the RAM given")
    return (f"VLLM_CPU_KVCACHE_SPACE unset: {release} sizes the KV cache as --gpu-memory-utilization × the NUMA "
            "node's RAM less the worker's own memory (0.20 on, PR #39781); assumed: one NUMA node, the RAM given, the "
            "worker's memory = weights + activation peak (the runtime's own is not counted)")
