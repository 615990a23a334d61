"""llama.cpp file types (llama.h: enum llama_ftype; gguf-py: LlamaFileType), the type each one starts every
quantizable tensor from (src/llama-quant.cpp llama_ftype_get_default_type), and exact tensor bytes per ggml type
(gguf-py's GGML_QUANT_SIZES)."""

from __future__ import annotations

import math

from ..errors import InputError
from ..units import round_up
from .ggml_types import QUANT_SIZES as GGML_QUANT_SIZES
from .ggml_types import GGMLType as GGMLQuantizationType
from .ggml_types import LlamaFileType

Q: type[GGMLQuantizationType] = GGMLQuantizationType     # a variable, not an alias: Q["Q4_K"] is a lookup by name
ALIGNMENT = 32      # GGUF_DEFAULT_ALIGNMENT (ggml/include/gguf.h)

# ------------------------------------------------------------------------------------------------
# file types (llama.h: enum llama_ftype; gguf-py: LlamaFileType)

_FTYPE_ALIASES = {"F32": "ALL_F32", "FP32": "ALL_F32", "FP16": "MOSTLY_F16", "Q3_K": "MOSTLY_Q3_K_M",
                  "Q4_K": "MOSTLY_Q4_K_M", "Q5_K": "MOSTLY_Q5_K_M", "MXFP4": "MOSTLY_MXFP4_MOE"}


def _ftype_name(ft: LlamaFileType) -> str:
    return "F32" if ft is LlamaFileType.ALL_F32 else ft.name.removeprefix("MOSTLY_")


# llama_ftype_get_default_type (src/llama-quant.cpp): the type every quantizable tensor starts from.
DEFAULT_TYPE: dict[str, str] = {
    "F32": "F32", "F16": "F16", "BF16": "BF16", "Q4_0": "Q4_0", "Q4_1": "Q4_1", "Q5_0": "Q5_0", "Q5_1": "Q5_1",
    "Q8_0": "Q8_0", "Q1_0": "Q1_0", "MXFP4_MOE": "MXFP4", "NVFP4": "NVFP4",
    "Q2_K": "Q2_K", "Q2_K_S": "Q2_K", "IQ3_XS": "IQ3_S", "Q3_K_S": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_L": "Q3_K",
    "Q4_K_S": "Q4_K", "Q4_K_M": "Q4_K", "Q5_K_S": "Q5_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K",
    "TQ1_0": "TQ1_0", "TQ2_0": "TQ2_0", "IQ2_XXS": "IQ2_XXS", "IQ2_XS": "IQ2_XS", "IQ2_S": "IQ2_XS",
    "IQ2_M": "IQ2_S", "IQ3_XXS": "IQ3_XXS", "IQ1_S": "IQ1_S", "IQ1_M": "IQ1_M", "IQ4_NL": "IQ4_NL",
    "IQ4_XS": "IQ4_XS", "IQ3_S": "IQ3_S", "IQ3_M": "IQ3_S",
}

# Every LLAMA_FTYPE_MOSTLY_* that gguf-py knows and whose tensor types it can size.
SUPPORTED_FTYPES: tuple[str, ...] = tuple(
    name for name in (_ftype_name(ft) for ft in LlamaFileType if ft.name != "GUESSED")
    if name in DEFAULT_TYPE and hasattr(Q, DEFAULT_TYPE[name]) and Q[DEFAULT_TYPE[name]] in GGML_QUANT_SIZES
)


def normalize_ftype(ftype: str) -> str:
    """'q4_k_m', 'MOSTLY_Q4_K_M', 'Q4_K' → 'Q4_K_M'; unknown names raise InputError."""
    key = ftype.strip().upper().replace("-", "_")
    key = _FTYPE_ALIASES.get(key, key)
    key = "F32" if key == "ALL_F32" else key.removeprefix("MOSTLY_")
    if key not in SUPPORTED_FTYPES:
        raise InputError(f"unknown llama.cpp quantization type '{ftype}'; known: {', '.join(SUPPORTED_FTYPES)}")
    return key


_UNQUANTIZED = frozenset((Q.F32, Q.F16, Q.BF16, Q.F64, Q.I8, Q.I16, Q.I32, Q.I64))


def is_quantized(t: GGMLQuantizationType) -> bool:
    return t not in _UNQUANTIZED


def block_size(t: GGMLQuantizationType) -> int:
    return GGML_QUANT_SIZES[t][0]


def tensor_bytes(shape: tuple[int, ...], qtype: GGMLQuantizationType) -> int:
    """ggml_nbytes of a row-major tensor: rows × (row length / block) × block bytes (exact)."""
    block, size = GGML_QUANT_SIZES[qtype]
    ncols = shape[-1] if shape else 1
    rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
    if ncols % block:
        raise InputError(f"row length {ncols} is not a multiple of {qtype.name}'s block of {block}")
    return rows * (ncols // block) * size


def pad_to_alignment(n: int) -> int:
    return round_up(n, ALIGNMENT)


