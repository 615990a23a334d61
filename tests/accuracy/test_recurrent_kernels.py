"""The recurrent layers' kernel counts and the one constant fitted on them (hardware/recurrent_speed.py), recounted from
runlocal's op-for-op mirror of llama.cpp's graphs (runtimes/ggml/arch.py, arch_hybrid.py) and refitted from the tuning
rows (evidence/speed_fit_hybrid.py)."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import pytest

from runlocal.hardware import recurrent_speed as RS
from runlocal.hardware import speed as S

pytest.importorskip("gguf", reason="gguf-py is not installed")

VIEWS = {"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE", "NONE"}


def _layer_kernels(alias: str, gdn: str) -> tuple[dict[int, int], set[int]]:
    """Kernels (nodes that are not views) between one layer's mark and the next, in the one-token graph."""
    from runlocal.evidence import qwen35_runs
    from runlocal.evidence.zero_gguf import write_model
    from runlocal.model.gguf import read_gguf
    from runlocal.runtimes.ggml.arch import GraphParams, build_graph

    with tempfile.TemporaryDirectory() as d:
        path = (qwen35_runs.write_gguf(alias, Path(d), False) if alias.startswith("qwen3")
                else write_model(alias, Path(d), "q4_0")["path"])
        spec = read_gguf(path)
    g = build_graph(spec, GraphParams(n_kv=512, flash_attn=True, gdn=gdn), 1, 1, 1).g
    marks = sorted(g.layer_marks.items())
    per = {}
    for i, (il, start) in enumerate(marks):
        end = marks[i + 1][1] if i + 1 < len(marks) else len(g.nodes)
        per[il] = sum(1 for n in g.nodes[start:end] if n.op not in VIEWS)
    recurrent = {i for i, layer in enumerate(spec.layers) if getattr(layer, "recurrent", None)}
    inner = {il: k for il, k in per.items() if 0 < il < len(marks) - 1}     # the first and last carry inputs / output
    return inner, recurrent


def _extra(alias: str, gdn: str) -> int:
    """Kernels a recurrent layer launches beyond an attention layer: the inner layers' kernels less the attention
    layers' (counted in the fused graph, which their build does not change) over the recurrent layers."""
    inner, rec = _layer_kernels(alias, gdn)
    attn_fused, _ = _layer_kernels(alias, "fused")
    attn = statistics.mean(k for il, k in attn_fused.items() if il not in rec)
    total = sum(inner.values()) - attn * sum(1 for il in inner if il not in rec)
    return round(total / sum(1 for il in inner if il in rec) - attn)


@pytest.mark.slow
@pytest.mark.parametrize("alias,family", [("qwen3-next-80b-a3b", "qwen3_next"), ("qwen3.5-35b-a3b", "qwen3_5_moe"),
                                          ("qwen3.5-27b", "qwen3_5"), ("granite-4.0-h-tiny", "granitemoehybrid")])
def test_extra_kernels_recount_in_the_graph_mirror(alias, family):
    paths = ("fused", "unfused") if family.startswith("qwen") else ("fused",)
    for path in paths:
        assert _extra(alias, "ar-unfused" if path == "unfused" else "fused") == RS.EXTRA_KERNELS[(family, path)], path


@pytest.mark.slow
def test_a_llama_layer_is_nineteen_kernels():
    inner, _ = _layer_kernels("llama-3.1-8b", "fused")
    assert set(inner.values()) == {RS.KERNELS_PER_LAYER}


def test_kernel_scale_is_the_tuning_rows_refit():
    from runlocal.evidence.speed_fit_hybrid import fit_kernel_scale

    assert fit_kernel_scale(S.FIT, S.SPLIT_OVERHEAD_MS) == RS.KERNEL_SCALE
