"""Builders for small real model files the tests write: header-only GGUFs and safetensors headers."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import gguf
import numpy as np

F32 = gguf.GGMLQuantizationType.F32


def _add(w: gguf.GGUFWriter, name: str, shape: tuple[int, ...], qtype: gguf.GGMLQuantizationType) -> None:
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = int(np.prod(shape))
    if qtype == F32:
        w.add_tensor_info(name, shape, np.float32, n * 4, raw_dtype=qtype)
    else:  # gguf-py takes the byte shape for quantized types
        byte_shape = tuple(shape[:-1]) + (shape[-1] // block * size,)
        w.add_tensor_info(name, byte_shape, np.uint8, n // block * size, raw_dtype=qtype)


def write_llama_gguf(path: Path, *, n_layers: int = 2, hidden: int = 256, heads: int = 8, kv_heads: int = 2,
                     ff: int = 512, vocab: int = 1000, qtype=gguf.GGMLQuantizationType.Q8_0, arch: str = "llama",
                     sliding_window: int | None = None, file_type: int = 7, sparse_to: int | None = None,
                     tokens: int | None = None) -> Path:
    """A GGUF header (metadata + tensor infos) of a llama-like model; the tensor data is absent
    unless ``sparse_to`` extends the file with a hole (zeros that cost no disk)."""
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(n_layers)
    w.add_embedding_length(hidden)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_context_length(8192)
    w.add_feed_forward_length(ff)
    w.add_file_type(file_type)
    if sliding_window:
        w.add_sliding_window(sliding_window)
    w.add_token_list([f"tok{i}" for i in range(tokens if tokens is not None else vocab)])
    head_dim = hidden // heads
    _add(w, "token_embd.weight", (vocab, hidden), qtype)
    _add(w, "output_norm.weight", (hidden,), F32)
    _add(w, "output.weight", (vocab, hidden), qtype)
    for i in range(n_layers):
        for name, shape in (("attn_q", (hidden, hidden)), ("attn_k", (kv_heads * head_dim, hidden)),
                            ("attn_v", (kv_heads * head_dim, hidden)), ("attn_output", (hidden, hidden)),
                            ("ffn_gate", (ff, hidden)), ("ffn_up", (ff, hidden)), ("ffn_down", (hidden, ff))):
            _add(w, f"blk.{i}.{name}.weight", shape, qtype)
        _add(w, f"blk.{i}.attn_norm.weight", (hidden,), F32)
        _add(w, f"blk.{i}.ffn_norm.weight", (hidden,), F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    if sparse_to:
        with open(path, "r+b") as f:
            f.truncate(sparse_to)
    return path


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]], metadata: dict | None = None) -> bytes:
    """A safetensors header (and zero data) for {name: (dtype, shape)}."""
    sizes = {"F32": 4, "F16": 2, "BF16": 2, "I8": 1, "U8": 1, "I32": 4, "F8_E4M3": 1}
    header: dict = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = int(np.prod(shape)) * sizes[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\0" * offset
