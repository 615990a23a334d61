"""Shrunken zero-weight GGUFs of one architecture, as the converter names their tensors and keys, that real
llama.cpp (llama-cpp-python) loads: the tensor data is a hole in a sparse file, every tensor F32."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

F32 = gguf.GGMLQuantizationType.F32


def write_zero_gguf(path: Path, arch: str, kv: dict, tensors: list[tuple[str, list[int]]]) -> Path:
    """``kv``: "{arch}.key" or "general.key" → value (type from the Python value); ``tensors``: (name, shape in
    numpy order, as gguf-py writes them)."""
    w = gguf.GGUFWriter(str(path), arch)
    for key, value in kv.items():
        key = key.format(arch=arch)
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, list):
            w.add_array(key, value)
        else:
            raise TypeError(key)
    sizes = [int(np.prod(shape)) * 4 for _, shape in tensors]
    for (name, shape), n in zip(tensors, sizes):
        w.add_tensor_info(name, list(shape), np.dtype(np.float32), n, raw_dtype=F32)
    w.write_header_to_file(path)
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    f = w.fout[0]
    start = gguf.GGUFWriter.ggml_pad(f.tell(), w.data_alignment)
    f.truncate(start + sum(gguf.GGUFWriter.ggml_pad(n, w.data_alignment) for n in sizes))   # zeros, no disk
    f.close()
    w.fout = None
    return path


# swa_full=False as llama-server's default (common/common.h); the C API's own default keeps full SWA caches
_LOAD = """
import sys, llama_cpp
llama_cpp.Llama(model_path=sys.argv[1], n_ctx=int(sys.argv[2]), n_gpu_layers=0, swa_full=sys.argv[3] == "1",
                n_batch=512, n_ubatch=512, n_threads=1, verbose=True, flash_attn=False)
"""


@dataclass(frozen=True)
class KvLog:
    """What llama.cpp logged about its KV cache(s): cells and layers per cache, bytes in all, n_swa, is_swa per
    repeating layer."""
    n_swa: int
    is_swa: tuple[bool, ...]
    caches: dict[str, tuple[int, int, int]]    # "full"/"swa" → (cells, layers, bytes)
    text: str

    @property
    def total_bytes(self) -> int:
        return sum(c[2] for c in self.caches.values())


_SIZE = re.compile(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers")


def load_with_llamacpp(path: Path, n_ctx: int, swa_full: bool = False) -> KvLog:
    """Load ``path`` with the real llama.cpp in a child process and read its KV cache lines."""
    r = subprocess.run([sys.executable, "-c", _LOAD, str(path), str(n_ctx), "1" if swa_full else "0"], check=False,
                       capture_output=True, text=True, timeout=120)
    text = r.stdout + r.stderr
    if r.returncode != 0:
        raise AssertionError(f"llama.cpp did not load {path.name}:\n{text[-3000:]}")
    swa = re.search(r"n_swa\s+= (\d+)", text)
    caches: dict[str, tuple[int, int, int]] = {}
    kind = "full"
    for line in text.splitlines():
        if "creating non-SWA KV cache" in line:
            kind = "full"
        elif "creating     SWA KV cache" in line or "creating SWA KV cache" in line:
            kind = "swa"
        m = _SIZE.search(line)
        if m:
            caches[kind] = (int(m.group(2)), int(m.group(3)), round(float(m.group(1)) * (1 << 20)))
    layers = {int(m.group(1)): m.group(2) == "1"
              for m in re.finditer(r"load_tensors: layer +(\d+) assigned to device \w+, is_swa = (\d)", text)}
    n_layer = int(re.search(r"n_layer\s+= (\d+)", text).group(1))
    return KvLog(int(swa.group(1)) if swa else 0, tuple(layers[i] for i in range(n_layer)), caches, text)
