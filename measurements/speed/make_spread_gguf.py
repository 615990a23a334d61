#!/usr/bin/env python3
"""Copy a zero-weight GGUF (runlocal.evidence.zero_gguf) so that a mixture of experts routes a prompt's tokens over
many experts, as a real model does, while every other weight stays zero.

Written into the copy (the rest stays a hole that reads back as zeros, so the file costs little disk):
  * token_embd.weight: random blocks (Q4_0: scale 0.25 and random 4-bit values, i.e. values in -2.0..1.75;
    Q8_0: scale 1/64 and random int8) — every token id gets its own random embedding;
  * every 1-D F32 tensor whose name holds "norm": 1.0 (so an RMS norm passes its input on unchanged in direction);
  * every ffn_gate_inp.weight (the router): signed normal(0, 1) values, a different draw per layer.
Everything else stays zero: attention, dense FFN, shared and routed experts output exactly 0, so every layer's
residual stream is the token's embedding and every router sees the normed embedding. Top-k of a random signed
projection of distinct random vectors sends the tokens to experts close to uniformly (routing_counts.py counts it
from the file's own bytes).

Why zero expert weights are enough for speed: ggml-cuda's MMQ tile loop (mmq.cuh mul_mat_q_process_tile, build
0c1e57098) runs load_tiles and vec_dot over a fixed range of k-blocks for every tile, with no branch on the values;
which tiles run depends only on how many tokens each expert got (mul_mat_q: ``expert_bounds``, a tile past
``col_diff`` is skipped). So values change speed only through the routing, which this file makes real.

Deterministic (seed 0): the same source gives the same bytes; the script prints a SHA-256 of the written regions.

Usage: python make_spread_gguf.py SRC.gguf DST.gguf
"""
from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import numpy as np

CHUNK_BLOCKS = 1 << 20          # blocks per write: 18-34 MiB
Q4_0_SCALE = np.float16(0.25)
Q8_0_SCALE = np.float16(1 / 64)


def _random_blocks(rng: np.random.Generator, qtype: str, n_blocks: int) -> bytes:
    """``n_blocks`` Q4_0 or Q8_0 blocks (ggml's layout: fp16 scale, then the quants) with random quants."""
    if qtype == "Q4_0":
        blocks = np.empty((n_blocks, 18), dtype=np.uint8)
        blocks[:, :2] = np.frombuffer(Q4_0_SCALE.tobytes(), dtype=np.uint8)
        blocks[:, 2:] = rng.integers(0, 256, size=(n_blocks, 16), dtype=np.uint8)
    elif qtype == "Q8_0":
        blocks = np.empty((n_blocks, 34), dtype=np.uint8)
        blocks[:, :2] = np.frombuffer(Q8_0_SCALE.tobytes(), dtype=np.uint8)
        blocks[:, 2:] = rng.integers(-127, 128, size=(n_blocks, 32), dtype=np.int8).view(np.uint8)
    else:
        raise SystemExit(f"token_embd.weight: type {qtype} not supported (expected Q4_0 or Q8_0)")
    return blocks.tobytes()


def write_spread(src: Path, dst: Path, seed: int = 0) -> str:
    """Write DST from SRC as the module docstring says; returns the SHA-256 of the written regions."""
    from gguf import GGUFReader
    reader = GGUFReader(src)
    size = src.stat().st_size
    rng = np.random.default_rng(seed)
    digest = hashlib.sha256()
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        fo.write(fi.read(int(reader.data_offset)))
        fo.truncate(size)                                   # the data: a hole reading back as zeros

        def put(offset: int, data: bytes) -> None:
            fo.seek(offset)
            fo.write(data)
            digest.update(data)

        for t in reader.tensors:
            qtype, offset = t.tensor_type.name, int(t.data_offset)
            if t.name == "token_embd.weight":
                block_bytes = 18 if qtype == "Q4_0" else 34
                n_blocks = int(t.n_bytes) // block_bytes
                for start in range(0, n_blocks, CHUNK_BLOCKS):
                    n = min(CHUNK_BLOCKS, n_blocks - start)
                    put(offset + start * block_bytes, _random_blocks(rng, qtype, n))
            elif "norm" in t.name and qtype == "F32" and len(t.shape) == 1:
                put(offset, np.ones(int(t.n_elements), dtype=np.float32).tobytes())
            elif t.name.endswith("ffn_gate_inp.weight") and qtype == "F32":
                put(offset, rng.standard_normal(int(t.n_elements), dtype=np.float32).tobytes())
    meta = src.with_suffix(".json")
    if meta.exists():
        shutil.copy(meta, dst.with_suffix(".json"))
    return digest.hexdigest()


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    src, dst = Path(argv[0]), Path(argv[1])
    sha = write_spread(src, dst)
    print(f"{dst}: {src.stat().st_size / 2**30:.2f} GiB, random embeddings, norms 1.0, signed random routers; "
          f"sha256 of the written regions {sha}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
