"""KV-cache bytes per token, by cache type, from a model's per-layer attention layout.

K and V are typed separately. A quantized ggml cache stores whole blocks per row, so a row of
``n`` elements of type ``t`` costs ``n / block(t) * type_size(t)`` bytes (ggml_row_size in ggml.c);
the table below is gguf-py's GGML_QUANT_SIZES for the types llama.cpp accepts as cache types
(common/arg.cpp: kv_cache_types).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InputError
from .model.spec import AttentionSpec, ModelSpec
from .quant.ggml_types import block_size

# (block size in elements, bytes per block) — ggml's table (quant/ggml_types.py, gguf-py's GGML_QUANT_SIZES)
CACHE_TYPES: dict[str, tuple[int, int]] = {
    **{t: block_size(t) for t in ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")},
    # vLLM / SGLang fp8 KV (--kv-cache-dtype fp8 | fp8_e4m3 | fp8_e5m2): one byte per element
    "fp8": (1, 1), "fp8_e4m3": (1, 1), "fp8_e5m2": (1, 1),
}
ALIASES = {"fp16": "f16", "float16": "f16", "half": "f16", "bfloat16": "bf16", "float32": "f32", "auto": "f16",
           "q8": "q8_0", "q4": "q4_0", "int8": "q8_0", "int4": "q4_0", "fp8_inc": "fp8"}


def normalize_cache_type(name: str, *, field: str = "kv-cache") -> str:
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in CACHE_TYPES:
        raise InputError(f"{field}: unknown cache type '{name}' (expected one of {', '.join(CACHE_TYPES)})")
    return key


def row_bytes(cache_type: str, n: int) -> int:
    """Bytes of one row of ``n`` elements; a row that is not whole blocks is refused (llama.cpp refuses it too)."""
    block, size = CACHE_TYPES[cache_type]
    if n % block:
        raise InputError(f"cache type {cache_type} needs rows that are multiples of {block} elements; this model's are {n}")
    return n // block * size


@dataclass(frozen=True)
class LayerKV:
    """Bytes one attention layer adds per cached token, and its cap (sliding window) if any."""

    k_bytes: int
    v_bytes: int
    window: int | None

    @property
    def bytes_per_token(self) -> int:
        return self.k_bytes + self.v_bytes


def layer_kv(att: AttentionSpec, cache_type_k: str, cache_type_v: str, *, store_v: bool = True) -> LayerKV:
    k = row_bytes(cache_type_k, att.n_kv_heads * att.k_dim)
    v = row_bytes(cache_type_v, att.n_kv_heads * att.v_dim) if store_v else 0
    return LayerKV(k, v, att.window if att.kind == "sliding" else None)


def kv_bytes_per_token(model: ModelSpec, cache_type_k: str = "f16", cache_type_v: str = "f16",
                       *, honour_window: bool = True) -> int:
    """Bytes per token summed over every attention layer (sliding layers included: below their window)."""
    return sum(layer_kv(a, cache_type_k, cache_type_v).bytes_per_token for a in model.attention_layers)


def kv_bytes(model: ModelSpec, tokens: int, cache_type_k: str = "f16", cache_type_v: str = "f16",
             *, honour_window: bool = True) -> int:
    """KV cache for ``tokens`` tokens of one sequence: linear in tokens, each sliding layer capped at its window."""
    total = 0
    for att in model.attention_layers:
        lk = layer_kv(att, cache_type_k, cache_type_v)
        n = min(tokens, lk.window) if (honour_window and lk.window) else tokens
        total += lk.bytes_per_token * n
    return total


def recurrent_state_bytes(model: ModelSpec, *, bytes_per_elem: int = 4) -> int:
    """Constant state per sequence of the recurrent / linear-attention layers (f32 by default)."""
    return sum((r.conv_elems + r.state_elems) * bytes_per_elem for r in model.recurrent_layers)
