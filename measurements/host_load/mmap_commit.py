"""Does opening a safetensors file for PyTorch need RAM + swap as large as the file?

Writes sparse safetensors files (one U8 tensor; a valid header, the data a hole: no disk used) of the sizes
given, opens each as vLLM / SGLang / transformers do (``safe_open(path, framework="pt")``, then ``get_slice``),
and prints what happened, with this machine's RAM, swap and vm.overcommit_memory. Run:

    python measurements/host_load/mmap_commit.py 10 20 30      # sizes in GiB
"""

from __future__ import annotations

import json
import os
import struct
import sys
import tempfile

GiB = 1 << 30


def write_sparse(path: str, nbytes: int) -> None:
    header = json.dumps({"w": {"dtype": "U8", "shape": [nbytes], "data_offsets": [0, nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + nbytes)


def meminfo() -> dict[str, int]:
    out = {}
    for line in open("/proc/meminfo"):
        k, v = line.split(":")
        out[k] = int(v.split()[0]) * 1024
    return out


def main(sizes: list[float]) -> None:
    import safetensors
    import torch
    from safetensors import safe_open

    m = meminfo()
    print(f"MemTotal {m['MemTotal'] / GiB:.2f} GiB, SwapTotal {m['SwapTotal'] / GiB:.2f} GiB, "
          f"vm.overcommit_memory {open('/proc/sys/vm/overcommit_memory').read().strip()}, "
          f"safetensors {safetensors.__version__}, torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as d:
        for gib in sizes:
            path = os.path.join(d, f"sparse-{gib:g}GiB.safetensors")
            write_sparse(path, int(gib * GiB))
            try:
                with safe_open(path, framework="pt") as f:
                    f.get_slice("w")
                print(f"{gib:6g} GiB file: opened")
            except Exception as e:           # noqa: BLE001 - the error text is the measurement
                print(f"{gib:6g} GiB file: {type(e).__name__}: {e}")
            os.unlink(path)


if __name__ == "__main__":
    main([float(x) for x in sys.argv[1:]] or [10, 20, 30])
