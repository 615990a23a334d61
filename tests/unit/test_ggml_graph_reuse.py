"""A reserved graph is built once and scheduled again for each layer placement (ggml/sched.py built_graph): the
scheduler rewrites sources in place, so each use must leave the graph as built. The compute buffers of a placement
must not depend on which placements were asked before it."""

from __future__ import annotations

from runlocal.model import catalog
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes import ggml
from runlocal.runtimes.ggml import sched
from runlocal.runtimes.llamacpp_swa import as_llamacpp_loads


def _model(alias: str):
    return gguf_view(as_llamacpp_loads(catalog.lookup(alias)), "Q4_K_M")


def _fresh(model, **kw):
    sched._BUILT.clear()
    return ggml.simulate_compute_cuda(model, 512, 4096, True, **kw)


def test_partial_offload_after_other_placements_matches_a_fresh_graph():
    model = _model("qwen3-30b-a3b")          # MoE: the expert overrides and the CUDA fusions rewrite sources
    n = model.n_layers
    asks = [dict(n_gpu_layers=n // 2),
            dict(layer_gpus=[0] * (n + 1), n_gpus=1, overrides=ggml.n_cpu_moe_overrides(n)),
            dict(n_gpu_layers=-1),
            dict(layer_gpus=[0] * (n // 2) + [1] * (n + 1 - n // 2), n_gpus=2),   # pipeline parallelism: flags too
            dict(n_gpu_layers=3)]
    fresh = [_fresh(model, **kw) for kw in asks]
    sched._BUILT.clear()
    reused = [ggml.simulate_compute_cuda(model, 512, 4096, True, **kw) for kw in asks]
    again = [ggml.simulate_compute_cuda(model, 512, 4096, True, **kw) for kw in reversed(asks)][::-1]
    assert reused == fresh
    assert again == fresh
    assert fresh[0] != fresh[2]               # the placements do size the buffers differently
