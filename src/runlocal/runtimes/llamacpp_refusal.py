"""llama_init_from_model's own refusals of a context's settings, with its words (llama.cpp src/llama-context.cpp
@0c1e57098, llama_init_from_model): the checks that depend on the model and the cache types alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..quant.ggml_types import block_size

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec
    from .base import Settings

FLOAT_CACHE = ("f16", "bf16", "f32")


def init_refusal(model: ModelSpec, s: Settings, fa: bool) -> str | None:
    """Why llama_init_from_model returns NULL for these settings (None: it does not)."""
    if any(a.kind == "mla" for a in model.attention_layers) and s.cache_type_k != s.cache_type_v:
        # MLA caches one latent that V is a view of: K and V must share a type
        return f"model does not support different K ({s.cache_type_k}) and V ({s.cache_type_v}) cache types"
    if not fa and s.cache_type_v not in FLOAT_CACHE:
        return "quantized V cache requires flash_attn to be enabled"
    if fa:
        # with flash attention a quantized cache's block must divide every layer's head width (a head of 80, as
        # StableLM-3B's and Phi-2's, and q8_0 / q4_0's 32-element blocks: refused; measured on the CPU in
        # measurements/llamacpp_h200/cpu_archs.jsonl)
        for part, ctype, widths in (("K", s.cache_type_k, [a.k_dim for a in model.attention_layers]),
                                    ("V", s.cache_type_v, [a.v_dim for a in model.attention_layers])):
            if ctype in FLOAT_CACHE:
                continue
            block = block_size(ctype)[0]
            bad = next((w for w in widths if w % block), None)
            if bad is not None:
                return (f"{part} cache type {ctype} with block size {block} does not divide "
                        f"n_embd_head_{part.lower()}={bad}")
    return None
