"""Which weight types the real llama.cpp repacks on this CPU (CPU_REPACK), against runtimes/ggml/repack.py.

For each ggml type, a shrunk zero-weight Qwen3-30B-A3B GGUF (qwen3moe: 2-D attention matrices and 3-D expert stacks)
is written with every matrix whose rows take that type's blocks stored in it, and a vocabulary of 260 tokens (the
output head's 260 rows are not a multiple of 8: it must not repack). llama-cpp-python 0.3.36 (llama.cpp 0c1e57098) loads it on the
CPU with its extra buffer types on (the default: a CPU-only model's list is "CPU extra -> CPU", src/llama-model.cpp
make_cpu_buft_list — what --no-host gives a GPU machine's CPU weights); the CPU_REPACK model buffer it logs is compared
with the bytes of the tensors runlocal's rule repacks on this CPU's features (avx512 here: /proc/cpuinfo and
llama_print_system_info say AVX512 = 1). Used by measurements/llamacpp_nohost/measure_repack.py (which wrote
records.jsonl) and tests/accuracy/test_llamacpp_nohost_real.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

TYPES = ("Q4_0", "Q4_K", "IQ4_NL", "MXFP4", "Q2_K", "Q8_0", "Q5_K", "Q6_K")
CPU = "avx512"
_CHILD = """
import sys, llama_cpp
from llama_cpp import _logger
_logger.set_verbose(True)
mp = llama_cpp.llama_model_default_params()
mp.n_gpu_layers = 0
model = llama_cpp.llama_model_load_from_file(sys.argv[1].encode(), mp)
assert model, "model did not load"
print(llama_cpp.llama_print_system_info().decode(), file=sys.stderr)
llama_cpp.llama_model_free(model)
"""
_BUFFER = re.compile(r"load_tensors: +(\S+) model buffer size = +([\d.]+) MiB")


def tensors_of(qtype: str) -> tuple[list, dict]:
    import gguf

    from runlocal.evidence.converter_meta import converter_kv, converter_shape, shrunk_config
    from runlocal.model.catalog import find_entry, lookup
    from runlocal.model.hf_config import spec_from_config
    from runlocal.quant.gguf_mix import gguf_arch, gguf_view

    alias = "qwen3-30b-a3b"
    arch, entry = gguf_arch(lookup(alias)), find_entry(alias)
    assert arch is not None and entry is not None
    config = shrunk_config(entry["config"], arch) | {"vocab_size": 260}
    view = gguf_view(spec_from_config(config, id=alias, source="measure_repack"), "F16")
    assert view is not None
    block = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]][0]
    out = []
    for t in view.tensors:
        ne = list(reversed(converter_shape(t.name, t.shape, arch)))
        dtype = t.dtype or "F32"
        if len(ne) >= 2 and "norm" not in t.name and "gate_inp" not in t.name and ne[0] % block == 0:
            dtype = qtype
        out.append((t.name, ne, gguf.GGMLQuantizationType[dtype]))
    return out, converter_kv(config, arch, 4096)


def planned_repack(tensors: list) -> int:
    """Bytes runlocal's rule (runtimes/ggml/repack.py) puts in CPU_REPACK for these tensors on this CPU."""
    import gguf

    from runlocal.runtimes.ggml.repack import repacked
    from runlocal.runtimes.ggml.types import Tensor

    total = 0
    for name, ne, qt in tensors:
        ne4 = (*ne, *[1] * (4 - len(ne)))
        t = Tensor(name, qt.name.lower(), ne4, (0, 0, 0, 0), weight=True)
        if repacked(t, CPU):
            blk, size = gguf.GGML_QUANT_SIZES[qt]
            n = 1
            for x in ne:
                n *= x
            total += n // blk * size
    return total


def measure(qtype: str, tmp: Path) -> dict:
    from runlocal.evidence.zero_gguf import write_zero_gguf

    tensors, kv = tensors_of(qtype)
    path = tmp / f"qwen3moe-{qtype}.gguf"
    write_zero_gguf(path, "qwen3moe", kv, tensors)
    r = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, timeout=300)
    buffers = {m.group(1): float(m.group(2)) for m in _BUFFER.finditer(r.stderr)}
    return {"type": qtype, "cpu": CPU, "logged_mib": buffers, "logged_repack_mib": buffers.get("CPU_REPACK", 0.0),
            "planned_repack_mib": round(planned_repack(tensors) / (1 << 20), 2),
            "system_info": next((ln for ln in r.stderr.splitlines() if ln.startswith("CPU :")), "")}


def measure_all(types: tuple[str, ...] = TYPES) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        return [measure(q, Path(tmp)) for q in types]
