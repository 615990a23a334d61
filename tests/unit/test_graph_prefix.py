"""graph_prefix: tracing only the first layers of a deep model must give the compute buffers that tracing all of
them gives (the planner traces the prefix for every context --fit and the solvers try). Checked here on catalog
models of every PREFIX_EXACT architecture, as the GGUF llama-quantize writes of them, CPU-only and all layers on
one GPU, over the settings that move the peak (context, ubatch, flash attention, quantized cache)."""

from __future__ import annotations

import itertools

import pytest

from runlocal.model import catalog
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes import ggml_graph
from runlocal.runtimes.llamacpp import PREFIX_EXACT, graph_prefix, simulated_compute

# the deepest catalog model of each architecture, and gemma-3-27b, whose 62 layers end two past a global layer
MODELS = ["llama-3.1-70b", "qwen3-32b", "qwen3-30b-a3b", "phi-3-mini-4k", "gemma-2-27b", "gemma-3-27b",
          "gemma-3-4b", "gpt-oss-20b"]


def test_every_prefix_architecture_is_covered():
    families = {gguf_view(catalog.lookup(m), "Q4_K_M").family for m in MODELS}
    assert families == set(PREFIX_EXACT)


@pytest.mark.parametrize("name", MODELS)
def test_prefix_gives_the_buffers_of_the_whole_graph(name):
    model = gguf_view(catalog.lookup(name), "Q4_K_M")
    assert ggml_graph.supported(model)
    prefix = graph_prefix(model)
    assert prefix.n_layers < model.n_layers
    window = next((a.window for a in model.attention_layers if a.window), None)
    for n_kv, ubatch, fa, ngl, cache in itertools.product([4096, 32768], [512, 2048], [True, False], [None, -1],
                                                          ["f16", "q8_0"]):
        if cache == "q8_0" and not fa:
            continue            # a quantized V cache needs flash attention
        n_swa = min(n_kv, -(-(window + ubatch) // 256) * 256) if window else None
        args = (ngl, ubatch, n_kv, fa, 1, 1, cache, cache, n_swa)
        assert simulated_compute(prefix, *args) == simulated_compute(model, *args), args
