"""The files of measurements/llamacpp_cpumoe/cuda_h200.jsonl (a real CUDA llama.cpp run of --cpu-moe, --n-cpu-moe and
--no-host, measurements/llamacpp_cpumoe/cuda_cpumoe.py): for each model, the zero-weight GGUF that runlocal's catalog
view of the quant describes (quant/gguf_mix.gguf_view; the converter's metadata, evidence/converter_meta; the writer of
evidence/zero_gguf). Written sparse, so a 20 GiB file costs its header; tests/accuracy/test_llamacpp_cpumoe_cuda.py
writes the same files (without the random bytes, which only the speed runs need) and plans each record with them.
Imports gguf and numpy (and runlocal's pure catalog modules), so the bare GPU machine runs it."""

from __future__ import annotations

import sys
from pathlib import Path

# (catalog alias, quant of the catalog's GGUF view): issue #23527's model first; the dense ones for run 2's -ngl half
MODELS = (("qwen3.6-35b-a3b", "Q4_K_M"), ("qwen3-30b-a3b", "Q4_K_M"), ("gpt-oss-20b", "MXFP4"))
DENSE = (("llama-3.1-8b", "Q4_K_M"), ("qwen3-32b", "Q4_K_M"))


def write_models(gguf_dir: Path, wanted: list[str], randomize: bool = True) -> dict[str, dict]:
    """Write each wanted model's file; with randomize, the token embedding, every norm and every router carry random
    bytes 0x00..0x3B (finite small floats: measurements/speed/make_random_gguf.py) so that a batch's tokens spread over
    the experts as with real weights (all-zero weights route every token to the same top-k experts)."""
    import gguf
    import numpy as np

    from runlocal.evidence.converter_meta import converter_kv, converter_shape
    from runlocal.evidence.zero_gguf import write_zero_gguf
    from runlocal.model.catalog import find_entry, lookup
    from runlocal.model.hf_config import spec_from_config
    from runlocal.quant.gguf_mix import gguf_arch, gguf_view

    gguf_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    for alias, quant in MODELS + DENSE:
        if alias not in wanted:
            continue
        arch, entry = gguf_arch(lookup(alias)), find_entry(alias)
        assert arch is not None and entry is not None, alias
        spec = spec_from_config(entry["config"], id=alias, source=f"cuda_cpumoe:{alias}")
        view = gguf_view(spec, quant)
        assert view is not None, (alias, quant)
        tensors = [(t.name, list(reversed(converter_shape(t.name, t.shape, arch))),
                    gguf.GGMLQuantizationType[t.dtype or "F16"]) for t in view.tensors]
        path = gguf_dir / f"{alias}.{quant}.gguf"
        write_zero_gguf(path, arch, converter_kv(entry["config"], arch, 262144), tensors)
        rng = np.random.default_rng(0)
        reader = gguf.GGUFReader(path)
        picked = [t for t in reader.tensors if randomize and (t.name == "token_embd.weight" or "norm" in t.name
                                                                 or "ffn_gate_inp" in t.name)]
        with open(path, "r+b") as f:
            for t in picked:
                f.seek(int(t.data_offset))
                f.write(rng.integers(0, 0x3C, size=int(t.n_bytes), dtype=np.uint8).tobytes())
        out[alias] = {"path": str(path), "quant": quant, "arch": arch, "n_layer": spec.n_layers,
                      "file_bytes": path.stat().st_size, "random_tensors": len(picked)}
        print(f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB, arch {arch}, {len(picked)} random tensors)",
              file=sys.stderr, flush=True)
    return out
