"""Reading a remote GGUF header transfers only the header.

Serves, from a loopback HTTP server, a header-only GGUF with Llama-3.3-70B's real shapes and a
full-size tokenizer (128,256 tokens, 280,147 merges), extended with a sparse tail to its real size
(about 42 GB at Q4_K_M), then reads it with runlocal's range reader and prints the bytes fetched.
Target: ≤ 16 MiB.   Run: python benchmarks/remote_header.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import gguf
import numpy as np

from runlocal.model.remote import read_remote_gguf
from runlocal.testing.range_server import serve_directory

Q4K, Q6K, F32 = gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K, gguf.GGMLQuantizationType.F32


def add(w, name, shape, q):
    block, size = gguf.GGML_QUANT_SIZES[q]
    n = int(np.prod(shape))
    if q == F32:
        w.add_tensor_info(name, shape, np.float32, n * 4, raw_dtype=q)
    else:
        w.add_tensor_info(name, tuple(shape[:-1]) + (shape[-1] // block * size,), np.uint8, n // block * size, raw_dtype=q)
    return n // block * size


def write_70b(path: Path) -> int:
    L, H, FF, V, KV = 80, 8192, 28672, 128256, 1024
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(L)
    w.add_embedding_length(H)
    w.add_head_count(64)
    w.add_head_count_kv(8)
    w.add_context_length(131072)
    w.add_feed_forward_length(FF)
    w.add_file_type(15)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"token-{i:06d}" for i in range(V)])
    w.add_token_types([1] * V)
    w.add_token_merges([f"m{i} n{i}" for i in range(280147)])
    w.add_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}" * 20)
    total = add(w, "token_embd.weight", (V, H), Q4K) + add(w, "output.weight", (V, H), Q6K)
    total += add(w, "output_norm.weight", (H,), F32)
    for i in range(L):
        for name, shape, q in (("attn_q", (H, H), Q4K), ("attn_k", (KV, H), Q4K), ("attn_v", (KV, H), Q6K),
                               ("attn_output", (H, H), Q4K), ("ffn_gate", (FF, H), Q4K), ("ffn_up", (FF, H), Q4K),
                               ("ffn_down", (H, FF), Q6K), ("attn_norm", (H,), F32), ("ffn_norm", (H,), F32)):
            total += add(w, f"blk.{i}.{name}.weight", shape, q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    header = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(header + total + 64)          # a hole: zeros that cost no disk
    return header


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "Llama-3.3-70B-Q4_K_M.gguf"
        header = write_70b(path)
        size = path.stat().st_size
        with serve_directory(Path(d)) as (base, stats):
            t0 = time.perf_counter()
            spec, transferred = read_remote_gguf(f"{base}/{path.name}")
            dt = time.perf_counter() - t0
        print(f"file size            {size / 1e9:8.2f} GB")
        print(f"header size          {header / 2**20:8.2f} MiB")
        print(f"bytes fetched        {transferred / 2**20:8.2f} MiB  ({transferred:,} B, {stats['requests']} requests)")
        print(f"server bytes sent    {stats['sent'] / 2**20:8.2f} MiB")
        print(f"time                 {dt:8.2f} s")
        print(f"model                {spec.n_layers} layers, {spec.params / 1e9:.2f}B params, "
              f"weights {spec.file_bytes / 1e9:.2f} GB")
        print(f"target ≤ 16 MiB:     {'PASS' if transferred <= 16 << 20 else 'FAIL'}")


if __name__ == "__main__":
    main()
