"""Which llama.cpp builds a fitted speed entry describes, and the KV bytes a decoded token reads with and without
flash attention.

Build era. runlocal plans for the current llama.cpp release unless a version is named. The CUDA entry for GDDR
NVIDIA cards (``nvidia-gddr/cuda``) is fitted only on records of 2025-2026 builds (``build_era: "current"`` in
measurements/speed/cuda_2025.jsonl): llama.cpp b6341-era builds (2025-08, PR #15631 / #15715) to 2026 (PR #24127), on
CUDA. Between the 2024 records (XiongjieDai's 2024-05 tables, PR #4766's 2024-01 rows) and these, int8 MMQ became the
default for every quant (PRs #7676, #7860, #8075), stream-k MMQ (#8018), CUDA graphs and fused kernels (#15631,
#16715) landed; the 2024 rows are kept as history (scored apart by benchmarks/speed_accuracy.py, not fitted for the
default plan). The speed path does not take ``--runtime llama.cpp==bNNNN``, so an older build's constants cannot be
selected by a plan yet.

Prompt rate by architecture. int8 MMQ does not reach the same share of the int8 peak on every architecture, so the
current builds' prompt efficiency is fitted per compute capability where the current-build tuning records carry it:
the entry's own (``nvidia-gddr/cuda``) on the architectures of CURRENT_PREFILL_ARCHS, and an entry of its own
(``nvidia-gddr/cuda@cc8.6``: the entry's constants with the prompt efficiency of that architecture's rows) for any other
with two prompt rows or more of integer quants run with flash attention (measurements/speed/held_out/
newbuilds2_queries.md: the llama.cpp CUDA scoreboard, discussion #15013). An architecture with neither keeps the 2024
builds' rate (``@2024``), unless no 2024 build ran it (Blackwell: the entry's own).

KV read per decoded token. With flash attention (llama.cpp's default ``-fa auto`` turns it on for CUDA, Metal and the
CPU) the vector kernel (ggml-cuda fattn-vec) reads each cached K and V row once per layer and keeps the scores on chip:
the KV bytes read are the cache's bytes, at the rate weights are read (KV factor 1, no constant fitted). Without it,
llama.cpp's graph (src/llama-graph.cpp build_attn_mha: ``kq = ggml_mul_mat(k, q)`` in F32, ``ggml_soft_max_ext``,
``kqv = ggml_mul_mat(v, kq)``) also writes the n_head × n_kv F32 scores, the softmax reads and writes them, and the
KQV product reads them: four passes of 4 bytes per query head per cached token per layer.

Vulkan (session 15, measurements/speed/held_out/backends2_queries.md). The Vulkan entries are fitted on 2025-2026
builds alone too (backends_2026.jsonl and the 2025+ records); no Vulkan record the fit reads is older than 2025, so
Vulkan has no history entry. The KV read with flash attention (ggml-vulkan vulkan-shaders/flash_attn_base.glsl
``init_indices``: "when using grouped query attention, each workgroup does gqa_ratio consecutive values of iq2", and
split_k gives each workgroup its own range of the cache, ``start_j`` … ``end_j``; flash_attn.comp loads each K / V tile
once for all of the group's query rows): a cached K and V row is read once per layer, as on CUDA — factor 1, derived
(FA_DERIVED_BACKENDS). Vulkan's prompt constants are fitted on every era's records (CURRENT_PREFILL_ENTRIES: CUDA only).

Metal is not split by era. A refit on current builds was tried in session 15 (``apple/metal`` fitted on
backends_2026.jsonl's Metal rows, kv_factor 6.329 → 1.169, the 2024 rows as ``apple/metal@2024``) and failed its held-out
round: backends2's Metal decode rows, median |error| 27.5 % before → 59.5 % after (held_out/backends2_first_run.txt;
DeepSeek-V2-Lite on an M2 Ultra +45 % at no depth to +276 % at 32K). ggml-metal.metal's ``kernel_flash_attn_ext_vec``
(the decode kernel below 20 tokens, ggml-metal-ops.cpp ``ggml_metal_op_flash_attn_ext_use_vec``) runs one threadgroup
per query head (``iq2 = tgpig[1]``), each reading its KV head's rows (``ikv2 = iq2/(ne02/ne_12_2)``): a KV head's rows
are read up to n_head / n_kv_head times, and the one factor fitted on one model's head ratio (Qwen3-0.6B, 16 / 8, on
one M2 Ultra) did not carry to others (gemma-3-1b 4, DeepSeek-V2-Lite's MLA 16), nor did the share of bandwidth fitted
with it (DeepSeek-V2-Lite +45 % at no depth). So the refit is not applied: Metal plans take the ``apple`` entry every
Metal record of every era fits, and backends_2026.jsonl's Metal rows are kept as evidence with ``fit_scope:
"scored_apart"`` (they fit no entry; evidence/speed_fit_history.report_scored_apart scores them). The KV read derived
from that kernel's grid, with one fitted share of re-reads the GPU cache serves, is hardware/metal_kv.py: fitted on
those rows and backends2's Metal rows (tuning since that round's one scoring), not applied — its held-out rounds found
no record (backends3) and too few to judge (backends4: one source, depth 512 only) — and shown by --explain beside the
apple entry's factor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Mapping

    from ..model.spec import ModelSpec
    from .speed import Fit

# the fit entries fitted on current builds only, and the words --explain gives for them
CURRENT_BUILD_ENTRIES = {"nvidia-gddr/cuda": "llama.cpp b6341-era+ on CUDA (2025-08 … 2026 builds)",
                         "nvidia-gddr/vulkan": "llama.cpp 2025-2026 builds on Vulkan",
                         # too few records of their own (6, from 2 devices): their class's bandwidth share and
                         # per-layer cost, with the Vulkan KV read
                         "amd/vulkan": "llama.cpp 2025-2026 builds on Vulkan (its class's bandwidth share)",
                         "soc/vulkan": "llama.cpp 2025-2026 builds on Vulkan (its class's bandwidth share)"}
# the current-build entries whose prompt constants are fitted on current builds alone (the rest: on every era's records)
CURRENT_PREFILL_ENTRIES = ("nvidia-gddr/cuda",)
# the backends whose flash-attention kernel reads a cached K and V row once per layer (above): KV factor derived
FA_DERIVED_BACKENDS = ("cuda", "vulkan")
# an entry's constants fitted on the older builds' records, kept beside it ("nvidia-gddr/cuda@2024"): what those records
# are scored with apart, and what a plan naming such a build would take once the speed path reads the build
HISTORY_SUFFIX = "@2024"
# The prompt rate: the entry's own current-build efficiency is fitted on, and taken for, these architectures (compute
# capability) — cuda_2025.jsonl's Ada rows (RTX 4090, 4070 Ti SUPER, 4080) — and those no 2024 build ran (Blackwell,
# below) unless an architecture entry of their own exists (ARCH_SUFFIX); other architectures take their own entry or
# the 2024 builds' figure (the @2024 entry): int8 MMQ did not speed every architecture alike.
CURRENT_PREFILL_ARCHS = {"nvidia-gddr/cuda": ("8.9",)}
# "<entry>@cc<compute capability>": the entry with the prompt efficiency of one architecture's current-build rows
ARCH_SUFFIX = "@cc"
FA_KV_FACTOR = 1.0          # flash attention: a KV byte is read once, like a weight byte (above)
SCORE_PASSES = 4            # no flash attention: KQ written, softmax read + write, KQV read
SCORE_BYTES = 4             # F32 scores


def score_bytes(model: ModelSpec, n_kv: int) -> float:
    """Bytes of attention scores one decoded token moves without flash attention, over ``n_kv`` cached tokens:
    SCORE_PASSES × SCORE_BYTES per query head per cached token in every attention layer (a sliding layer: its window)."""
    cached = sum(min(n_kv, att.window) if att.window else n_kv for att in model.attention_layers)
    return float(SCORE_PASSES * SCORE_BYTES * model.n_heads * cached)


def arch_key(fit_key: str, compute_capability: str) -> str:
    """The key of ``fit_key``'s entry for one architecture's prompt rate: "nvidia-gddr/cuda@cc8.6"."""
    return f"{fit_key}{ARCH_SUFFIX}{compute_capability}"


def prefill_entry(fit_key: str, compute_capability: str | None, fits: Mapping[str, Fit]) -> Fit | None:
    """The entry whose prompt-rate constants apply instead of ``fit_key``'s: the architecture's own entry where its
    current-build rows fitted one (ARCH_SUFFIX), else its 2024 builds' entry where the current builds' prompt efficiency
    was not fitted on this architecture (CURRENT_PREFILL_ARCHS); None to keep ``fit_key``'s."""
    archs = CURRENT_PREFILL_ARCHS.get(fit_key)
    if archs is None:
        return None
    own = fits.get(arch_key(fit_key, compute_capability)) if compute_capability else None
    if own is not None:
        return own
    if compute_capability in archs or _newer_than_2024_builds(compute_capability):
        return None
    return fits.get(fit_key + HISTORY_SUFFIX)


def _newer_than_2024_builds(compute_capability: str | None) -> bool:
    """Blackwell (compute capability 10.x / 12.x) first compiles with CUDA 12.8 (January 2025): no 2024 build ran one,
    so the 2024 builds' prompt rate cannot describe it, and it takes the current builds' (fitted on Ada, its nearest
    kind)."""
    try:
        return compute_capability is not None and float(compute_capability) >= 10.0
    except ValueError:
        return False


def fa_derived(fit_key: str) -> bool:
    """Whether an entry ("class/backend[:variant]") reads the KV with a flash-attention kernel whose read is derived
    (FA_DERIVED_BACKENDS), not fitted."""
    return fit_key.split(":")[0].split("/")[-1] in FA_DERIVED_BACKENDS


def era_words(fit_key: str | None) -> str:
    """--explain's note on which builds a fit entry describes ("" for an entry fitted on every record)."""
    return CURRENT_BUILD_ENTRIES.get(fit_key or "", "")


__all__ = ["ARCH_SUFFIX", "CURRENT_BUILD_ENTRIES", "CURRENT_PREFILL_ARCHS", "CURRENT_PREFILL_ENTRIES", "FA_DERIVED_BACKENDS",
           "FA_KV_FACTOR", "HISTORY_SUFFIX", "arch_key", "era_words", "fa_derived", "prefill_entry", "score_bytes"]
