"""The prompt's micro-batch on CUDA: what llama.cpp's MMQ launches cost a micro-batch beyond their FLOPs.

hardware/speed.py prices a prompt token at its FLOPs over a fitted share of the card's peak plus a fitted per-layer
cost, both fitted on llama-bench rows that nearly all run llama.cpp's default micro-batch of 512 tokens. llama.cpp
runs a smaller ``-ub`` slower per token (the own H100, run 6: 0.58-0.72x at 128), and how much slower depends on the
card. This module derives the difference from ggml-cuda's quantized matmul (MMQ) launch, read in ggml-org/llama.cpp
ggml/src/ggml-cuda/mmq.cuh (the copy of commit 00cd208554; the same launch logic as build 0c1e57098 of the own runs,
measurements/speed/README-h100.md cites its ``tiles_efficiency_percent >= 90 ? ntiles_dst : nsm``):

- ``get_mmq_y_host``: a tile is 128 weight rows on NVIDIA from Volta on; ``get_mmq_x_max_host``: up to 128 token
  columns with Turing's int8 mma (``turing_mma_available``); ``mul_mat_q_case`` takes the narrowest width with the
  fewest column tiles (``backend_speed.mmq_tile_width``: 128 for any micro-batch of 128 or more).
- ``launch_mul_mat_q`` (stream-k, which ``ggml_cuda_mul_mat_q`` turns on for NVIDIA Volta and later): ``ntiles_dst =
  ntx * nty * ntzw`` tiles, ``tiles_nwaves = ceil(ntiles_dst / nsm)`` waves over the card's ``nsm`` SMs,
  ``tiles_efficiency_percent = 100 * ntiles_dst / (nsm * tiles_nwaves)``. At 90 % or more it launches one CUDA block
  per tile (plain tiling: the last wave leaves ``nsm * waves - ntiles`` SMs idle for one tile's time); below, it
  launches ``nsm`` blocks that split the tiles' k-iterations evenly (stream-k), and when ``ntiles_dst % nsm != 0``
  each block writes its unfinished tile to ``tmp_fixup`` and a second kernel, ``mul_mat_q_stream_k_fixup``, adds
  them up.

So the FLOPs of a matmul do not set its time alone: a stream-k launch pays a fixed cost per launch (the partial tiles,
the fixup kernel, their launches) whatever the number of tokens, and a tiled one pays its last wave's idle SMs. Per
micro-batch of U tokens the model runs one launch per weight matrix and layer; which kind each is follows from U,
the matrix's rows (the model's shapes) and the card's SM count (``Device.sm_count``). Per token that is
``extra(U) / U``; the fitted constants already price ``extra(512) / 512``, so the term is the difference
(``ubatch_seconds``): zero at 512, positive below (more stream-k launches per token), negative above.

One constant is fitted: ``STREAM_K_LAUNCH_US``, the fixed time of one stream-k launch, on the tuning rows only (the
own H100 micro-batch curve, measurements/speed/h100/dense_ubatch_run6.jsonl, and held-out round 6, scored in session
13 and tuning since), against each sweep's speed relative to its own 512 row (benchmarks/ubatch_fit.py). Not applied
(0): float weights (cuBLAS, not MMQ), cards before Turing (a V100 multiplies a large batch through cuBLAS:
backend_speed._turing_or_later), other vendors and backends, and cards with no SM count in the catalog.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..memo import IdMemo, per_model
from .backend_speed import _turing_or_later, mmq_tile_width

# In the plan because it beat no-term on held-out round 8, scored once with the term committed off (30 public RTX
# 4090 / 3090 rows, measurements/speed/held_out/round8_first_run.txt): prompt median |error| 22.3 % → 22.2 %, p90
# 33.6 % → 31.4 %; each sweep against its own 512 row 9.6 % → 7.6 %.
APPLIED = True
_forced: bool | None = None     # scored(): benchmarks/speed_accuracy.py scores round 8 both ways
MMQ_ROWS = 128                  # mmq.cuh get_mmq_y_host: NVIDIA, Volta and later
TILING_EFFICIENCY_PCT = 90      # mmq.cuh launch_mul_mat_q: one block per tile at or above this wave efficiency
REFERENCE_UBATCH = 512          # llama.cpp's default -ub, which the fitted constants were measured at
# Fitted (benchmarks/ubatch_fit.py) on the tuning rows' speed ratios to their 512 row; see the module docstring.
# 34 µs (13.7 % → 3.2 %) until session 15's flash-attention term (fa_prefill.py) moved the own H100 runs' base figures
# (33 µs, 11.1 % → 4.1 %); 34 µs again since session 15's per-architecture prompt rates (build_era.py) moved them back
STREAM_K_LAUNCH_US = 34.0      # tuning rows: median |ratio error| 11.2 % → 4.0 % (41 rows)
# Weight matrices that do not run through MMQ in a prompt batch: the input embedding (get_rows), the output head
# (only the rows of the tokens whose logits are wanted: llama-bench's one), the router and biases (F32), vision/audio.
_NOT_MMQ = {"embed", "lm_head", "router", "bias", "vision", "projector", "audio", "pos_embed"}


@dataclass(frozen=True)
class LaunchCount:
    """One micro-batch's MMQ launches on one card: how many are stream-k and the tiled ones' idle SM share."""
    ubatch: int
    stream_k: int               # launches split over the SMs (each pays STREAM_K_LAUNCH_US)
    tiled: int                  # launches with one block per tile
    idle_flops: float           # FLOPs the tiled launches' idle SMs could have done in their last wave


def launch_kind(ntiles: int, nsm: int) -> tuple[bool, int]:
    """(stream-k?, idle SM slots) of one MMQ launch of ``ntiles`` tiles on ``nsm`` SMs (launch_mul_mat_q)."""
    waves = math.ceil(ntiles / nsm)
    efficiency_pct = 100 * ntiles // (nsm * waves)
    if efficiency_pct >= TILING_EFFICIENCY_PCT:
        return False, nsm * waves - ntiles
    return True, 0


def count_launches(matrices: list[tuple[int, int, int]], ubatch: int, nsm: int) -> LaunchCount:
    """The launches of one micro-batch of ``ubatch`` tokens: ``matrices`` are (rows, columns of K, channels) per weight
    matrix of every layer (channels: experts of a MUL_MAT_ID stack, 1 otherwise)."""
    width = mmq_tile_width(ubatch)
    ntx = math.ceil(ubatch / width)
    stream_k = tiled = 0
    idle = 0.0
    for rows, k, channels in matrices:
        nty = math.ceil(rows / MMQ_ROWS)
        is_stream_k, idle_slots = launch_kind(ntx * nty * channels, nsm)
        if is_stream_k:
            stream_k += 1
            continue
        tiled += 1
        if channels == 1:       # an expert stack's tiles mostly hold no tokens: its idle share is not this one's
            idle += idle_slots * 2.0 * MMQ_ROWS * width * k
    return LaunchCount(ubatch, stream_k, tiled, idle)


@per_model
def mmq_matrices(model) -> list[tuple[int, int, int]]:
    """(rows, K, channels) of each weight matrix a prompt batch multiplies through MMQ, every layer's; kept per model
    (every plan of a search prices its prompt again: ~1,700 tensors of a GLM-4.5-size MoE walked each time)."""
    out = []
    for t in model.tensors:
        if len(t.shape) < 2 or t.role in _NOT_MMQ:
            continue
        channels = t.shape[0] if len(t.shape) == 3 else 1
        out.append((int(t.shape[-2]), int(t.shape[-1]), int(channels)))
    return out


def applies(backend: str | None, vendor: str | None, quantized: bool, compute_capability: str | None,
            sm_count: int | None) -> bool:
    """The term's scope: llama.cpp CUDA on NVIDIA Turing or later, integer-quantized weights (MMQ), SM count known."""
    return (backend == "cuda" and (vendor or "").lower() == "nvidia" and quantized and bool(sm_count)
            and _turing_or_later(compute_capability))


@dataclass(frozen=True)
class UbatchTerm:
    """The micro-batch term of one plan: seconds per prompt token added to the 512-token price, and its inputs."""
    ubatch: int
    sm_count: int
    at_ubatch: LaunchCount
    at_reference: LaunchCount
    seconds_per_token: float


def ubatch_term(model, ubatch: int, sm_count: int, flops_per_s: float,
                launch_us: float | None = None) -> UbatchTerm:
    """extra(U)/U − extra(512)/512: extra = stream-k launches × ``launch_us`` + the tiled launches' idle FLOPs at the
    card's achieved rate ``flops_per_s`` (the plan's efficiency × peak)."""
    launch_us = STREAM_K_LAUNCH_US if launch_us is None else launch_us
    here = _launches(model, ubatch, sm_count)
    ref = _launches(model, REFERENCE_UBATCH, sm_count)

    def per_token(c: LaunchCount) -> float:
        extra = c.stream_k * launch_us * 1e-6 + (c.idle_flops / flops_per_s if flops_per_s > 0 else 0.0)
        return extra / c.ubatch

    return UbatchTerm(ubatch, sm_count, here, ref, per_token(here) - per_token(ref))


def _launches(model, ubatch: int, sm_count: int) -> LaunchCount:
    """count_launches over the model's matrices, kept per (model, micro-batch, SM count): a pure function of them."""
    return _LAUNCHES.get(model, (ubatch, sm_count), lambda: count_launches(mmq_matrices(model), ubatch, sm_count))


_LAUNCHES = IdMemo(256)


def with_term(tokens_per_s: float | None, term: UbatchTerm | None) -> float | None:
    """A prompt speed with the micro-batch term's seconds per token added."""
    if not tokens_per_s or term is None:
        return tokens_per_s
    t = 1.0 / tokens_per_s + term.seconds_per_token
    return 1.0 / t if t > 0 else tokens_per_s


def active() -> bool:
    """Whether predictions carry the term now: APPLIED, unless a scoring run (``scored``) says otherwise."""
    return APPLIED if _forced is None else _forced


@contextmanager
def scored(on: bool) -> Iterator[None]:
    """Predict with the term on or off inside the block (held-out scoring of both; the plan reads APPLIED)."""
    global _forced
    saved, _forced = _forced, on
    try:
        yield
    finally:
        _forced = saved


MMVQ_MAX_BATCH_SIZE = 8    # ggml-cuda/mmvq.cuh: up to 8 columns go to mul_mat_vec_q


def plan_term(model, dev, quantized: bool, backend: str | None, ggml: bool, ubatch: int,
              flops_per_s: float) -> UbatchTerm | None:
    """The term for a llama.cpp plan (``ggml``) on ``dev`` at ``ubatch``; None where it is off or out of scope."""
    if not active() or not ggml or dev is None or not flops_per_s:
        return None
    if ubatch <= MMVQ_MAX_BATCH_SIZE:   # ggml-cuda mmvq.cuh: batches this small run the decode kernel, not MMQ
        return None
    if not applies(backend, dev.vendor, quantized, dev.compute_capability, dev.sm_count):
        return None
    return ubatch_term(model, ubatch, dev.sm_count, flops_per_s)
