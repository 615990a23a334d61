"""Metal decode's KV read with flash attention, from the kernel llama.cpp runs: ggml-metal's FA vec kernel.

Not applied to plans (``APPLIED``): Metal plans keep the ``apple`` entry's fitted KV factor (hardware/build_era.py).
Its first held-out round (measurements/speed/held_out/backends3_queries.md) found no record that met its rule; the
second, with a wider rule (backends4_queries.md: llama-server / llama-cli / batched-bench timings too, any repository,
the pages corpus), found 16 records from one source — ax-engine's committed llama-bench baselines, M3 Max, b8500, fa 1,
decode only at 512 cached tokens — and its pass needs at least 8 fa-on decode rows at depth from two sources, so it
is too few to judge (backends4_first_run.txt: MdAPE 22.0 → 16.2 % with the term on those 8 rows, recorded, not
acted on). The term stays beside the plan, shown by --explain, as the session-15 Metal refit did.

What the kernel reads. A decoded token (one query row) runs ``kernel_flash_attn_ext_vec`` (ggml-metal.metal; chosen
for fewer than 20 query rows, ggml-metal-ops.cpp ``ggml_metal_op_flash_attn_ext_use_vec``). The op dispatches the
grid ``((ne01 + nqptg - 1)/nqptg, ne02, ne03*nwg)`` threadgroups (ggml-metal-ops.cpp ``ggml_metal_op_flash_attn_ext``):
one column of threadgroups per **query** head (``ne02`` = n_head; ``iq2 = tgpig[1]`` in the kernel). Each threadgroup
points at its KV head, ``ikv2 = iq2/(args.ne02/args.ne_12_2)``, and walks that head's K and V rows: its ``nsg``
simdgroups and the ``nwg`` (32) workgroups split the *cache* between them (``for (int ic0 = iwg*NSG + sgitg; ;
ic0 += NWG*NSG)``; ``nsg`` doubles to 4 while ``2*nwg*nsg*ncpsg < ne11``), never the query heads: the op says
``const int nhptg = 1; // heads per threadgroup`` (ggml-org/llama.cpp ggml/src/ggml-metal/ggml-metal-ops.cpp at
000cfab8, the vec branch after ``fa_vec_pick``). So every one of
the g = n_head / n_kv_head query heads that share a KV head reads that head's rows from memory again, unless the GPU's
cache still holds them from a sibling threadgroup. (CUDA's and Vulkan's vec kernels give one block all g query heads
of a KV head and read a row once: build_era.py, FA_DERIVED_BACKENDS.) The per-device (Q, NE) tuning (PR #25750,
ggml-metal-tuning.cpp ``fa_vec_pick``) changes queries per threadgroup (Q: query *rows*, for speculative batches) and
head elements per thread (NE), not this grid.

The term: bytes read per token = Σ over attention layers of the layer's KV bytes (kv.py: its cached tokens, a sliding
layer's window) × (1 + (g − 1) × (1 − ABSORBED)): the first query head's read reaches memory, a share ABSORBED of each
re-read is served by the GPU's cache. ABSORBED is the one fitted constant (evidence/speed_fit_metalkv.py, least squares
of log(predicted / measured) over the Metal decode rows of 2025-2026 builds: backends_2026.jsonl's scored-apart rows and
held_out/backends2.jsonl's, that round scored once already). A KV byte is then priced like a weight byte (KV factor 1),
with the ``apple`` entry's bandwidth share and per-layer cost. MLA (DeepSeek-V2): one latent KV head shared by every
query head (g = n_head); the K and V bytes are those kv.py counts for the latent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..kv import layer_kv

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import AttentionSpec, ModelSpec

# the share of a KV head's re-reads (by its 2nd … g-th query head) the GPU's cache serves; fitted by
# evidence/speed_fit_metalkv.py fit_absorbed (least squares of log error, 0.01 steps) on the tuning rows it names
ABSORBED = 0.52   # 0.53 until session 22: refit on the same rows after fixes22c's byte-counted read and decode refit
APPLIED = False     # plans keep the apple entry's KV factor: held-out backends3 had no records, backends4 too few
SOURCE = ("ggml-metal.metal kernel_flash_attn_ext_vec (ikv2 = iq2/(ne02/ne_12_2)); ggml-metal-ops.cpp "
          "ggml_metal_op_flash_attn_ext: threadgroups (rows/nqptg, ne02 query heads, ne03*nwg)")


def reads_per_row(n_heads: int, att: AttentionSpec, absorbed: float = ABSORBED) -> float:
    """Times one cached K / V row of this layer reaches memory per decoded token: once, plus (1 − absorbed) for each
    further query head sharing its KV head."""
    group = n_heads / att.n_kv_heads
    return 1.0 + (group - 1.0) * (1.0 - absorbed)


@dataclass(frozen=True)
class LayerGroup:
    """Attention layers of one shape: query heads per KV head, how many, the KV bytes they hold, the bytes read."""

    group: float
    window: int | None      # a sliding layer's window (its cached tokens' cap)
    layers: int
    kv_bytes: float
    read_bytes: float


def metal_kv_groups(model: ModelSpec, tokens: int, absorbed: float = ABSORBED,
                    cache_type_k: str = "f16", cache_type_v: str = "f16") -> list[LayerGroup]:
    """The term per layer shape, for ``tokens`` cached tokens (a sliding layer: at most its window)."""
    acc: dict[tuple[float, int | None], list[float]] = {}
    for att in model.attention_layers:
        lk = layer_kv(att, cache_type_k, cache_type_v)
        held = lk.bytes_per_token * (min(tokens, lk.window) if lk.window else tokens)
        key = (model.n_heads / att.n_kv_heads, lk.window)
        slot = acc.setdefault(key, [0, 0.0, 0.0])
        slot[0] += 1
        slot[1] += held
        slot[2] += held * reads_per_row(model.n_heads, att, absorbed)
    return [LayerGroup(g, w, int(n), kv, rd) for (g, w), (n, kv, rd) in acc.items()]


def metal_kv_read(model: ModelSpec, tokens: int, absorbed: float = ABSORBED,
                  cache_type_k: str = "f16", cache_type_v: str = "f16") -> float:
    """Bytes of KV one decoded token reads on Metal with flash attention, over ``tokens`` cached tokens."""
    return sum(g.read_bytes for g in metal_kv_groups(model, tokens, absorbed, cache_type_k, cache_type_v))


def explain_words(model: ModelSpec, tokens: int, plan_factor: float, absorbed: float = ABSORBED) -> tuple[str, str]:
    """--explain's formula and value for the term at ``tokens`` cached tokens, beside the plan's ``plan_factor`` × KV."""
    groups = metal_kv_groups(model, tokens, absorbed)
    kv = sum(g.kv_bytes for g in groups)
    read = sum(g.read_bytes for g in groups)
    parts = " + ".join(f"{g.layers} {'sliding (window ' + format(g.window, ',') + ') ' if g.window else ''}layers "
                       f"{g.kv_bytes / 1e9:.3f} GB × (1 + ({g.group:g} − 1) × (1 − {absorbed:g}))" for g in groups)
    formula = (f"KV at ctx {tokens:,}: {parts} = {read / 1e9:.3f} GB read a token (g = {model.n_heads} query heads ÷ "
               f"the layer's KV heads; {absorbed:g} = share of re-reads the GPU cache serves, fitted); the figure above "
               f"prices {plan_factor:g} × {kv / 1e9:.3f} GB (the apple entry's fitted factor, mostly on 2024 builds: "
               "on current builds' rows at depth it is off by tens of percent either way — benchmarks/speed_accuracy.py, "
               "'Scored apart') — term not applied: its held-out rounds found too few records to judge it")
    return formula, f"{read / 1e9:.3f} GB/token"


__all__ = ["ABSORBED", "APPLIED", "SOURCE", "LayerGroup", "explain_words", "metal_kv_groups", "metal_kv_read",
           "reads_per_row"]
