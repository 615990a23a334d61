"""Which tensors llama-quantize gives which type, with each type's parameter count and bits per weight: the inputs
that let a reader recompute the weights step's bytes (params × bytes per block ÷ block size), review19 #9. The
types are quant.gguf_mix's choice (src/llama-quant.cpp llama_tensor_get_type: output and, in the use_more_bits
layers, attn_v and ffn_down one type up); this module only counts and names them."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from .memo import IdMemo
from .model.spec import ModelSpec
from .quant.formats import WeightEstimate
from .runtimes.base import Step

MAX_NAMES = 4      # tensor kinds named per type; the rest counted


@lru_cache(maxsize=4096)
def _kind(name: str) -> str:
    return re.sub(r"\.weight$", "", re.sub(r"^blk\.\d+\.", "", name))


def type_mix_step(model: ModelSpec, w: WeightEstimate) -> Step | None:
    """One line per ggml type: its tensors (by kind, × the layers that have it), parameters and bits per weight,
    where the GGUF view's per-type bytes are the weights step's own (else None: nothing to show that adds up).
    Kept per model object and what it reads of the estimate: every llama.cpp and Ollama plan of a model at one quant
    shows the same step, and counting a 1,700-tensor MoE's view takes ~4 ms."""
    if w.source != "src/llama-quant.cpp" or not model.tensors:
        return None
    return _STEPS.get(model, (w.quant, tuple(w.by_kind.items())), lambda: _type_mix_step(model, w))


_STEPS = IdMemo(256)


def _type_mix_step(model: ModelSpec, w: WeightEstimate) -> Step | None:
    from .quant.ggml_types import block_size
    from .quant.gguf_mix import gguf_view

    view = gguf_view(model, w.quant)
    if view is None:
        return None
    params: Counter = Counter()
    size: Counter = Counter()
    kinds: dict[str, Counter] = {}
    for t in view.tensors:
        if t.dtype is None or t.nbytes is None:
            continue
        params[t.dtype] += t.numel
        size[t.dtype] += t.nbytes
        kinds.setdefault(t.dtype, Counter())[_kind(t.name)] += 1
    if dict(size) != {k: v for k, v in w.by_kind.items() if v}:
        return None
    lines = []
    order = sorted(params, key=lambda k: -params[k])
    for dtype in order:
        n = params[dtype]
        block, nbytes = block_size(dtype)
        named = kinds[dtype].most_common()
        words = ", ".join(f"{k} ×{c}" if c > 1 else k for k, c in named[:MAX_NAMES])
        more = f", {len(named) - MAX_NAMES} more kinds" if len(named) > MAX_NAMES else ""
        lines.append(f"{dtype} {n:,} params × {nbytes} B per {block} ({words}{more})")
    return Step("weights: type per tensor", "; ".join(lines), ", ".join(f"{k} {size[k]:,} B" for k in order),
                "src/llama-quant.cpp llama_tensor_get_type (quant/gguf_mix.py)")
