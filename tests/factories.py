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
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(hidden // heads)
    n_tokens = tokens if tokens is not None else vocab
    if n_tokens >= 260:     # a loadable byte-level BPE vocabulary padded to the model's vocab size
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("default")
        w.add_token_list(byte_level_vocab() + ["ab"] + [f"<pad{i}>" for i in range(n_tokens - 257)])
        w.add_token_types([1] * 257 + [4] * (n_tokens - 257))
        w.add_token_merges(["a b"])
    else:
        w.add_token_list([f"tok{i}" for i in range(n_tokens)])
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


def byte_level_vocab() -> list[str]:
    """GPT-2's byte-to-unicode table: 256 single-character tokens that cover any UTF-8 text."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def write_tiny_chat_gguf(path: Path, *, n_layers: int = 2, hidden: int = 64, heads: int = 4, kv_heads: int = 2,
                         ff: int = 128, n_ctx_train: int = 4096) -> Path:
    """A zero-weight llama GGUF with a byte-level BPE tokenizer, complete with data, that llama.cpp
    loads and serves: every text tokenizes (one token per byte) and generation runs (on zeros)."""
    vocab = byte_level_vocab() + ["<s>", "</s>", "ab"]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(n_layers)
    w.add_embedding_length(hidden)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_context_length(n_ctx_train)
    w.add_feed_forward_length(ff)
    w.add_rope_dimension_count(hidden // heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(vocab)
    w.add_token_types([1] * 256 + [3, 3, 1])
    w.add_token_merges(["a b"])          # llama.cpp needs at least one merge in a BPE vocabulary
    w.add_bos_token_id(256)
    w.add_eos_token_id(257)
    w.add_add_bos_token(False)
    v = len(vocab)
    hd = hidden // heads
    shapes = {"token_embd.weight": (v, hidden), "output_norm.weight": (hidden,), "output.weight": (v, hidden)}
    for i in range(n_layers):
        shapes |= {f"blk.{i}.attn_norm.weight": (hidden,), f"blk.{i}.attn_q.weight": (hidden, hidden),
                   f"blk.{i}.attn_k.weight": (kv_heads * hd, hidden), f"blk.{i}.attn_v.weight": (kv_heads * hd, hidden),
                   f"blk.{i}.attn_output.weight": (hidden, hidden), f"blk.{i}.ffn_norm.weight": (hidden,),
                   f"blk.{i}.ffn_gate.weight": (ff, hidden), f"blk.{i}.ffn_up.weight": (ff, hidden),
                   f"blk.{i}.ffn_down.weight": (hidden, ff)}
    for name, shape in shapes.items():
        data = np.ones(shape, dtype=np.float32) if name.endswith("norm.weight") else np.zeros(shape, dtype=np.float32)
        w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
