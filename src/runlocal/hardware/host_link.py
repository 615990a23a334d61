"""How fast a prompt batch's weights in RAM cross to the GPU: the link's rate, or a pageable copy's, and the range a
plan prints where the pageable rate is not known for the machine (review22 #3).

llama.cpp (and Ollama) run a large prompt batch's matmuls on the GPU, weights kept in RAM too: each micro-batch copies
them over the host link (ggml-backend.cpp ggml_backend_sched_compute_splits; with --n-cpu-moe, the experts the batch
routes tokens to). Pure.
"""

from __future__ import annotations

import re

PCIE_GBS_PER_LANE = {"3.0": 0.985, "4.0": 1.969, "5.0": 3.938}
# a pinned copy reaches this share of the link's nominal rate: measured, the H200 runs below with --no-mmap moved the
# used experts at 49.5 / 53.6 GB/s on PCIe 5.0 x16 (63.0 nominal × 0.8 = 50.4)
PCIE_EFFICIENCY = 0.8
DEFAULT_PCIE_GBS = 16 * PCIE_GBS_PER_LANE["4.0"] * PCIE_EFFICIENCY

# llama.cpp / Ollama with mmap (the default) keep host weights in the plain CPU buffer (CPU_Mapped: pageable memory,
# src/llama-model.cpp "avoid using a host buffer when using mmap"), so the per-batch copy of an offloaded op's weight
# is a pageable host-to-device copy, staged by the driver, not a pinned one at the link's rate (--no-mmap: CUDA_Host,
# pinned). Measured: --cpu-moe prefill (pp512) on an H200 (PCIe 5.0 x16), 1.95 / 2.09 / 1.13 s a batch beyond the
# all-GPU time (Qwen3.6-35B-A3B, Qwen3-30B-A3B, gpt-oss-20b: measurements/llamacpp_cpumoe/cuda_h200.jsonl). The
# scheduler copies only the experts the batch routes tokens to (ggml-backend.cpp ggml_backend_sched_compute_splits,
# "copy only the experts that are used"); those runs' random routers used 67 / 86 / 80 % of them, recomputed from the
# files (measurements/llamacpp_cpumoe/used_experts.py): 13.0 / 15.1 / 8.1 GB, so 6.7, 7.2 and 7.2 GB/s — the mean.
# THAT MACHINE'S FIGURE: one lent H200 server (16 vCPUs of an unrecorded Intel Xeon), not a desktop. A pageable copy is
# staged through the driver's pinned bounce buffer by the CPU, so its rate is the host's (its memory copy speed, the
# IOMMU, the driver), not the GPU's or the link's; no desktop measurement of it was found (review22 #3 cites three
# desktop prompt rates, each 2–5× what this rate allows, with caveats; they are checked, not fitted, in
# tests/accuracy/test_pageable_prefill_range.py). So a plan prints a range (pageable_range): this rate … the link's.
# A plan takes every routed expert as copied: with a trained router a 512-token batch uses them all
# (1 − (1 − k/E)^512 ≥ 0.98 for every catalog MoE); a smaller --ubatch would copy fewer — not modelled.
PAGEABLE_H2D_GBS = 7.0
PAGEABLE_SOURCE = ("measured on one lent H200 server's host (PCIe 5.0 x16): --cpu-moe pp512, "
                   "measurements/llamacpp_cpumoe/cuda_h200.jsonl")
# prefill_not_predicted's words for such a plan; render/text.py keys its one-line phrase on the first words
PAGEABLE_NOTE = ("not predicted as one figure: weights in RAM cross to the GPU each micro-batch from mmap'd "
                 f"(pageable) memory, a copy whose rate was measured on one server only ({PAGEABLE_H2D_GBS:g} GB/s, "
                 "a lent H200's host), not on desktops; --no-mmap makes it a pinned copy at the link's rate, which is "
                 "predicted")


def pcie_gbs(pcie: str | None) -> float:
    """Usable host-link bandwidth from the catalog's "4.0 x16"."""
    m = re.match(r"\s*(\d\.\d)\s*x(\d+)", pcie or "")
    if not m or m.group(1) not in PCIE_GBS_PER_LANE:
        return DEFAULT_PCIE_GBS
    return PCIE_GBS_PER_LANE[m.group(1)] * int(m.group(2)) * PCIE_EFFICIENCY


def host_link_gbs(pcie: str | None, pageable: bool) -> float:
    """The rate host weights cross to the GPU at: the link's, or a pageable copy's (PAGEABLE_H2D_GBS) when lower."""
    return min(pcie_gbs(pcie), PAGEABLE_H2D_GBS) if pageable else pcie_gbs(pcie)


def pageable_range(tokens_per_s: float | None, cpu_weight_bytes: float, ubatch: int,
                   pcie: str | None) -> tuple[float, float] | None:
    """(low, high) prompt tokens/s for a plan whose host weights are copied from mmap'd memory: ``tokens_per_s`` priced
    with the copy at PAGEABLE_H2D_GBS (the one measured host), and the same with the copy at the link's rate (a pinned
    copy's, the fastest a copy crosses). The copy's seconds add to the rest (speed.prefill_speed), so only that term
    changes. None where nothing crosses or the link is no faster than the measured rate."""
    link = pcie_gbs(pcie)
    slow = min(link, PAGEABLE_H2D_GBS)
    if not tokens_per_s or cpu_weight_bytes <= 0 or link <= slow:
        return None
    saved = cpu_weight_bytes / ubatch * (1 / (slow * 1e9) - 1 / (link * 1e9))
    return tokens_per_s, 1.0 / (1.0 / tokens_per_s - saved)


def pageable_range_words(low: float, high: float, cpu_weight_bytes: float, ubatch: int,
                         pcie: str | None) -> tuple[str, str]:
    """--explain's formula and value for pageable_range."""
    link = pcie_gbs(pcie)
    return (f"{cpu_weight_bytes / 1e9:.1f} GB of weights in RAM copied to the GPU per {ubatch}-token batch from mmap'd "
            f"(pageable) memory: at {PAGEABLE_H2D_GBS:g} GB/s ({PAGEABLE_SOURCE}; that machine's rate, not a desktop's) "
            f"{low:,.1f} tokens/s … at the link's {link:.1f} GB/s (PCIe {pcie or 'assumed 4.0 x16'} × "
            f"{PCIE_EFFICIENCY:g}: a pinned copy's rate, measured on the same server with --no-mmap) {high:,.1f} "
            "tokens/s; the rest of the prompt's time as priced above",
            f"{low:,.0f}–{high:,.0f} tokens/s (range)")
