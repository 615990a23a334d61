"""Predicted decode and prefill speed from memory bandwidth and compute.

Decode is memory-bound: every token reads the active weights once plus the KV cache so far, so
tokens/s ≈ efficiency × bandwidth / bytes read per token. With partial offload the CPU part is
read at RAM bandwidth and the two times add. Prefill is compute-bound: 2 × active params FLOPs per
token at an achieved share of the device's dense fp16 tensor throughput. The efficiencies are
fitted to public measurements (benchmarks/speed_accuracy.py prints the error per device class).
"""

from __future__ import annotations

from dataclasses import dataclass

# Share of datasheet bandwidth a llama.cpp decode achieves, by device kind (fit, see module doc).
DECODE_EFFICIENCY = {"gpu": 0.70, "unified": 0.65, "cpu": 0.55}
PREFILL_EFFICIENCY = {"gpu": 0.45, "unified": 0.35, "cpu": 0.5}
CPU_FLOPS_PER_CORE = 100e9   # AVX-512/AMX-less desktop core, fp16/int8 dot products


@dataclass(frozen=True)
class SpeedEstimate:
    decode_tokens_per_s: float | None
    prefill_tokens_per_s: float | None
    formula: str


def decode_speed(*, gpu_bytes: float, cpu_bytes: float, gpu_bandwidth_gbs: float | None, gpu_kind: str,
                 ram_bandwidth_gbs: float | None, tp: int = 1) -> float | None:
    """Tokens/s when each token reads ``gpu_bytes`` from the GPU(s) and ``cpu_bytes`` from RAM."""
    t = 0.0
    if gpu_bytes:
        if not gpu_bandwidth_gbs:
            return None
        t += gpu_bytes / (DECODE_EFFICIENCY.get(gpu_kind, 0.7) * gpu_bandwidth_gbs * 1e9 * max(1, tp))
    if cpu_bytes:
        if not ram_bandwidth_gbs:
            return None
        t += cpu_bytes / (DECODE_EFFICIENCY["cpu"] * ram_bandwidth_gbs * 1e9)
    return 1.0 / t if t else None


def prefill_speed(*, active_params: int, tflops: float | None, kind: str) -> float | None:
    if not tflops:
        return None
    return PREFILL_EFFICIENCY.get(kind, 0.45) * tflops * 1e12 / (2 * active_params)
