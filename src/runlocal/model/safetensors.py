"""Read safetensors headers — per-tensor dtype, shape and exact bytes — without the tensor data.

The format is an 8-byte little-endian header length, then that many bytes of JSON. We parse it
from bytes ourselves so the same bounded parser serves a local file, a partial download and a
fuzzer (safetensors' own safe_open maps the whole file and needs it complete).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

from ..errors import ModelFormatError, ModelNotFoundError
from .limits import MAX_TENSOR_ELEMENTS, loads_bounded, printable
from .spec import TensorInfo

# safetensors itself refuses headers over 100 MB (MAX_HEADER_SIZE, safetensors/src/tensor.rs); real ones are
# far smaller: a 5 GB shard of DeepSeek-V3 lists ~1,000 tensors in ~150 KB, and even 100,000 tensors in one
# file would take ~10 MB. 16 MiB is read and parsed in well under a second and 200 MB.
MAX_HEADER = 16 << 20
DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
               "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "E8M0": 1}


def header_length(prefix: bytes, name: str) -> int:
    if len(prefix) < 8:
        raise ModelFormatError(f"{name}: too short for a safetensors file ({len(prefix)} bytes)")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n < 2 or n > MAX_HEADER:
        raise ModelFormatError(f"{name}: safetensors header length {n} is out of range (2 … {MAX_HEADER})")
    return n


def parse_header(raw: bytes, name: str) -> tuple[list[TensorInfo], dict[str, Any]]:
    """The JSON header bytes → (tensors, __metadata__). Shapes and offsets are validated."""
    doc = loads_bounded(bytes(raw), name, "safetensors header")
    if not isinstance(doc, dict):
        raise ModelFormatError(f"{name}: safetensors header must be a JSON object")
    meta = doc.pop("__metadata__", None) or {}
    tensors = []
    for tname, info in doc.items():
        tname = printable(tname, 200)
        if not isinstance(info, dict):
            raise ModelFormatError(f"{name}: tensor '{tname}' entry is not an object")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            raise ModelFormatError(f"{name}: tensor '{tname}' has unknown dtype {str(dtype)[:20]!r}")
        if not (isinstance(shape, list) and len(shape) <= 8
                and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_TENSOR_ELEMENTS for d in shape)):
            raise ModelFormatError(f"{name}: tensor '{tname}' shape must be a list of up to 8 non-negative integers "
                                   f"up to {MAX_TENSOR_ELEMENTS:,}")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise ModelFormatError(f"{name}: tensor '{tname}' data_offsets must be [start, end] with start ≤ end")
        nbytes = offsets[1] - offsets[0]
        numel = 1
        for d in shape:
            numel *= d
        if numel > MAX_TENSOR_ELEMENTS:
            raise ModelFormatError(f"{name}: tensor '{tname}' has {numel:,} elements (expected at most "
                                   f"{MAX_TENSOR_ELEMENTS:,})")
        if nbytes != numel * DTYPE_BYTES[dtype]:
            raise ModelFormatError(f"{name}: tensor '{tname}' has {nbytes} bytes for {numel} {dtype} elements")
        role, layer = hf_role(tname)
        tensors.append(TensorInfo(tname, tuple(shape), role, layer, dtype, nbytes))
    return tensors, meta if isinstance(meta, dict) else {}


def read_local(path: str | Path) -> tuple[list[TensorInfo], dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise ModelNotFoundError(f"{path}: no such file")
    with p.open("rb") as f:
        n = header_length(f.read(8), str(p))
        raw = f.read(n)
    if len(raw) < n:
        raise ModelFormatError(f"{p}: file ends inside the safetensors header ({len(raw)} of {n} bytes)")
    return parse_header(raw, str(p))


# --------------------------------------------------------------------------------------------
# Hugging Face parameter names → roles (transformers naming across families)

_LAYER = re.compile(r"(?:layers|h|blocks|block)\.(\d+)\.")
_PATTERNS: list[tuple[str, str]] = [
    (r"vision|visual|image_newline|vit\.|siglip", "vision"),
    (r"multi_modal_projector|mm_projector|merger", "projector"),
    (r"audio", "audio"),
    (r"embed_tokens|wte\.|tok_embeddings|word_embeddings", "embed"),
    (r"lm_head|output\.weight$|embed_out", "lm_head"),
    (r"norm|ln_", "norm"),
    (r"\.bias$", "bias"),
    (r"q_a_proj", "attn_q_a"), (r"q_b_proj", "attn_q_b"), (r"kv_a_proj", "attn_kv_a"), (r"kv_b_proj", "attn_kv_b"),
    (r"sinks", "attn_sinks"),
    (r"qkv_proj|query_key_value|c_attn|Wqkv", "attn_qkv"),
    (r"q_proj", "attn_q"), (r"k_proj", "attn_k"), (r"v_proj", "attn_v"), (r"o_proj|out_proj\.weight$|dense\.weight$", "attn_o"),
    (r"shared_expert.*gate_proj|shared_experts.*gate_proj", "shared_gate"),
    (r"shared_expert.*up_proj|shared_experts.*up_proj", "shared_up"),
    (r"shared_expert.*down_proj|shared_experts.*down_proj", "shared_down"),
    (r"experts.*gate_up", "expert_gate_up"),
    (r"experts.*(gate_proj|w1)", "expert_gate"), (r"experts.*(up_proj|w3)", "expert_up"),
    (r"experts.*(down_proj|w2)", "expert_down"),
    (r"mlp\.gate\.|router|block_sparse_moe\.gate|shared_expert_gate", "router"),
    (r"gate_up_proj", "ffn_gate_up"), (r"gate_proj|w1\.", "ffn_gate"), (r"up_proj|w3\.", "ffn_up"),
    (r"down_proj|w2\.", "ffn_down"),
    (r"in_proj", "ssm_in"), (r"out_proj", "ssm_out"), (r"conv1d", "ssm_conv"),
    (r"A_log|\.D$|dt_bias|dt_proj", "ssm_param"),
]
_COMPILED = [(re.compile(p), role) for p, role in _PATTERNS]


def hf_role(name: str) -> tuple[str, int | None]:
    m = _LAYER.search(name)
    layer = int(m.group(1)) if m else None
    for pattern, role in _COMPILED:
        if pattern.search(name):
            return role, (None if role in ("vision", "projector", "audio") else layer)
    return "other", layer
