"""A catalog model as the shrunk zero-weight GGUF real llama.cpp loads (issue 18, point 6): its config cut to one
period of its layer pattern (converter_meta.shrunk_config), its tensors as runlocal's GGUF view names them in the
shapes convert_hf_to_gguf.py writes (converter_meta.converter_shape / converter_extra_tensors), its metadata as the
converter writes it (converter_meta.converter_kv), the data a hole (zero_gguf.write_zero_gguf).

Used by tests/accuracy/test_llamacpp_catalog_real.py (every catalog model on the CPU) and by
measurements/llamacpp_h200/ (one model per architecture on CUDA, compared by test_llamacpp_cuda_archs.py).
"""

from __future__ import annotations

from pathlib import Path

from ..model.catalog import find_entry, lookup
from ..model.hf_config import spec_from_config
from ..model.spec import ModelSpec
from ..quant.gguf_mix import gguf_arch, gguf_view
from .converter_meta import converter_extra_tensors, converter_kv, converter_shape, shrunk_config


def context_for(spec: ModelSpec) -> int:
    """2,048 cells, or twice the config's largest window so a window llama.cpp applies (or drops) shows; a window
    past the model's trained context (Phi-4-mini's 262,144) is none."""
    windows = [a.window for a in spec.attention_layers if a.kind == "sliding" and a.window
               and a.window < (spec.max_position_embeddings or 1 << 30)]
    return min(32768, max(2048, 2 * max(windows, default=0)))


def shrunk_spec(alias: str) -> tuple[ModelSpec, dict, str]:
    """(the shrunk config's spec, the shrunk config, the GGUF architecture) of a catalog model."""
    arch = gguf_arch(lookup(alias))
    assert arch is not None
    entry = find_entry(alias)
    assert entry is not None
    config = shrunk_config(entry["config"], arch)
    return spec_from_config(config, id=alias, source=f"shrunk:{alias}"), config, arch


def write_gguf(alias: str, out_dir: Path, *, mtp: bool = False, n_ctx: int | None = None,
               name: str | None = None) -> tuple[ModelSpec, Path, int]:
    """The shrunk model's F16 GGUF in ``out_dir`` (``name``, default ``<alias>.gguf``); ``n_ctx``: its
    context_length key (default context_for). ``mtp``: with the multi-token-prediction block the converter appends
    by default to Qwen3.5 (conversion/qwen.py _Qwen35MtpMixin: block_count + mtp_num_hidden_layers,
    nextn_predict_layers; the block is a full-attention decoder layer plus nextn.eh_proj / enorm / hnorm /
    shared_head_norm) and to GLM-4.5 (conversion/glm.py Glm4MoeModel: the same nextn tensors after a MoE decoder
    layer)."""
    import gguf

    from .zero_gguf import write_zero_gguf

    spec, config, arch = shrunk_spec(alias)
    view = gguf_view(spec, "F16")
    assert view is not None
    groups = int(config.get("n_groups") or 1)
    tensors = [(t.name, list(reversed(converter_shape(t.name, t.shape, arch, groups, spec.n_experts))),
                gguf.GGMLQuantizationType[str(t.dtype)]) for t in view.tensors]
    tensors += [(tname, list(reversed(shape)), gguf.GGMLQuantizationType.F32)
                for tname, shape in converter_extra_tensors(config, arch)]
    n_ctx = n_ctx or context_for(spec)
    kv = converter_kv(config, arch, n_ctx)
    if mtp:
        n, e, f32 = spec.n_layers, spec.hidden_size, gguf.GGMLQuantizationType.F32
        last_full = max(i for i, la in enumerate(spec.layers) if la.attention is not None)
        tensors += [(tname.replace(f"blk.{last_full}.", f"blk.{n}."), ne, qt) for tname, ne, qt in tensors
                    if tname.startswith(f"blk.{last_full}.")]
        tensors += [(f"blk.{n}.nextn.eh_proj.weight", [2 * e, e], gguf.GGMLQuantizationType.F16),
                    *((f"blk.{n}.nextn.{x}.weight", [e], f32) for x in ("enorm", "hnorm", "shared_head_norm"))]
        kv |= {"{arch}.block_count": n + 1, "{arch}.nextn_predict_layers": 1}
    path = Path(out_dir) / (name or f"{alias}{'-mtp' if mtp else ''}.gguf")
    write_zero_gguf(path, arch, kv, tensors)
    return spec, path, n_ctx


__all__ = ["context_for", "shrunk_spec", "write_gguf"]
