"""The KV cache and recurrent state steps of a llama.cpp plan, with the inputs a reader needs to recompute them from
config.json (review19 #9): each layer shape's kv_heads × head_dim × bytes per element (an MLA layer's latent K with
no V), the sliding-window layers' cells formula, and the recurrent layers' state element counts.

Pure words over numbers the planner already has (llamacpp_layout's Pools, Context, the model's layers); the rules are
llama.cpp's: src/llama-kv-cache.cpp (one K row of n_head_kv × n_embd_head_k, one V row, each at its cache type;
is_mla: no V, PR #19067), src/llama-kv-cache-iswa.cpp (size_swa = min(size_base, GGML_PAD(n_swa × (unified ?
n_seq_max : 1) + n_ubatch, n_pad))), src/llama-memory-recurrent.cpp (r_l / s_l rows in f32, one per sequence).
"""

from __future__ import annotations

from collections import Counter

from ..kv import CACHE_TYPES, row_bytes
from .base import Settings, Step
from .llamacpp_layout import CTX_PAD, MLA_CACHE_HEADS, Context, Pools, mla_as_cached, mla_head_widths


def kv_cache_step(p: Pools, c: Context, s: Settings) -> Step:
    """The KV cache as its sum: each group of layers (the whole context's, each window's) its bytes per token × its
    cells per stream, × the streams, + any row padding the backend adds — terms that multiply out to the value."""
    terms = [f"{n} {'full-attention' if w is None else f'sliding-window ({w:,})'} layer{'s' if n > 1 else ''} × "
             + (f"{per // n:,} B/token" if per % n == 0 else f"({per:,} B/token in all) / {n}") + f" × {cells:,} cells"
             for w, n, per, cells in p.kv_groups]
    summed = sum(per * cells for _, _, per, cells in p.kv_groups) * c.n_stream
    kv_total = sum(d.kv for d in p.all)
    row_pad = kv_total - summed
    formula = (f"({' + '.join(terms)}) × {c.n_stream} stream{'s' if c.n_stream > 1 else ''}"
               + (f" + {row_pad:,} B row padding (ggml-cuda get_alloc_size)" if row_pad else ""))
    return Step("KV cache", f"{formula}, K {s.cache_type_k} V {s.cache_type_v}", f"{kv_total:,} B",
                "src/llama-kv-cache.cpp, llama-kv-cache-iswa.cpp")


def _element(cache_type: str) -> str:
    """Bytes per element as the cache type stores it: "2 B" (f16), "34 B per 32" (q8_0's blocks)."""
    block, size = CACHE_TYPES[cache_type]
    return f"{size} B" if block == 1 else f"{size} B per {block}"


def kv_inputs_step(model, s: Settings, mla_cache: str) -> Step | None:
    """Bytes per token of one layer of each attention shape, from config.json's widths: K n_kv_heads × head_dim at the
    K type + V likewise (an MLA layer as the build caches it: the latent, kv_lora_rank + qk_rope_head_dim, no V)."""
    heads = mla_head_widths(model) if mla_cache == MLA_CACHE_HEADS else None
    shapes: dict[tuple, Counter] = {}
    for a in model.attention_layers:
        cached = mla_as_cached(a, mla_cache, heads)
        kind = "MLA" if a.kind == "mla" else a.kind
        shapes.setdefault((cached.kind == "mla", cached.n_kv_heads, cached.k_dim, cached.v_dim), Counter())[kind] += 1
    if not shapes:
        return None
    ctk, ctv = s.cache_type_k, s.cache_type_v
    lines, values = [], []
    for (as_cached, n, k, v), kinds in shapes.items():
        layers = (f"{sum(kinds.values())} layers ({', '.join(f'{c} {kd}' for kd, c in kinds.items())})"
                  if len(kinds) > 1 else f"{sum(kinds.values())} {next(iter(kinds))} layers")
        kb = row_bytes(ctk, n * k)
        if as_cached:
            lines.append(f"{layers}: K (kv_lora_rank {v} + qk_rope {k - v}) × {_element(ctk)} = {kb:,} B, "
                         "no V (a view of K)")
            values.append(f"{kb:,} B")
            continue
        vb = row_bytes(ctv, n * v)
        lines.append(f"{layers}: K {n} kv_heads × {k} head_dim × {_element(ctk)} + V {n} × {v} × {_element(ctv)} "
                     f"= {kb + vb:,} B")
        values.append(f"{kb + vb:,} B")
    mla = any(key[0] for key in shapes)
    return Step("KV per token, one layer", "; ".join(lines), " / ".join(values),
                ("config.json kv_lora_rank, qk_rope_head_dim; src/llama-kv-cache.cpp (is_mla: no V rows, PR #19067)"
                 if mla else "config.json num_key_value_heads, head_dim; src/llama-kv-cache.cpp (a K and a V row)"))


def swa_cells_step(model, c: Context, s: Settings, n_swa_cells: int) -> Step | None:
    """The sliding-window layers' cells, as src/llama-kv-cache-iswa.cpp sizes them (llamacpp_layout.swa_cells)."""
    windows = [a.window for a in model.attention_layers if a.kind == "sliding" and a.window]
    if not windows or not n_swa_cells:
        return None
    if s.llamacpp.swa_full:
        return Step("sliding-window cells", "--swa-full: the whole context per stream", f"{n_swa_cells:,}",
                    "src/llama-kv-cache-iswa.cpp")
    seqs = c.n_seq if c.n_stream == 1 else 1
    n_swa = windows[-1]
    return Step("sliding-window cells",
                f"min(ctx per stream {c.n_ctx_seq:,}, pad(n_swa {n_swa:,} × {seqs} seq + n_ubatch {c.n_ubatch}, "
                f"{CTX_PAD}))", f"{n_swa_cells:,}", "src/llama-kv-cache-iswa.cpp (size_swa)")


def recurrent_step(model, n_seq: int, total: int) -> Step:
    """The recurrent layers' state: per layer conv + ssm elements in f32, one state per sequence."""
    shapes = Counter((la.recurrent.conv_elems, la.recurrent.state_elems) for la in model.layers
                     if la.recurrent is not None)
    terms = " + ".join(f"{n} layers × ({conv:,} conv + {ssm:,} ssm elements)" for (conv, ssm), n in shapes.items())
    return Step("recurrent state", f"({terms}) × 4 B (f32) × {n_seq} seq", f"{total:,} B",
                "src/llama-memory-recurrent.cpp")
