#!/usr/bin/env python3
"""Copy a zero-weight GGUF (measurements/llamacpp/make_zero_gguf.py) with its data section filled
with random bytes, to check that zero weights run at the speed of real ones.

Every data byte is drawn uniformly from 0x00..0x3B, so any float read from the data is finite and
small: an fp16 (Q4_0 / Q8_0 / Q6_K block scale) has |x| < 1, an f32 (norms) |x| < 2**-8, an E8M0
(MXFP4) scale < 2**-67.  Activations stay finite and an MoE router gets varied logits, but every router
weight is positive (and half of every Q4_0 block's values negative), so the routing is not that of a
real model: its speed (+3 % against zero where a spreading router runs -41 %) says it stayed
concentrated (README-h100.md, runs 3-5; make_spread_gguf.py spreads it).
A 64 MiB random block is repeated to fill the file (fast to write).

Usage: python make_random_gguf.py SRC.gguf DST.gguf
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    src, dst = Path(argv[0]), Path(argv[1])
    from gguf import GGUFReader
    offset = int(GGUFReader(src).data_offset)
    size = src.stat().st_size
    block = np.random.default_rng(0).integers(0, 0x3C, size=64 * 2**20, dtype=np.uint8).tobytes()
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        fo.write(fi.read(offset))
        left = size - offset
        while left > 0:
            n = min(left, len(block))
            fo.write(block[:n])
            left -= n
    meta = src.with_suffix(".json")
    if meta.exists():
        shutil.copy(meta, dst.with_suffix(".json"))
    print(f"{dst}: {size / 2**30:.2f} GiB, data from byte {offset} random", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
