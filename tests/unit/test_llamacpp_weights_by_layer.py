"""Without -ot rules, a layout's weight bytes per device are summed per layer from per-model sums
(llamacpp_layout._place_by_layer) instead of tensor by tensor: the same bytes and the same largest host-kept
expert weight per GPU, for the layouts --fit tries and for any other -ngl, --tensor-split or --n-cpu-moe."""

from __future__ import annotations

import random

import pytest

from runlocal.check import CheckRequest, check
from runlocal.runtimes import llamacpp_layout as layout


@pytest.mark.parametrize("model,gpu", [
    ("qwen3-30b-a3b", "rtx-3060"),      # MoE, partial offload
    ("deepseek-v2-lite", "rtx-3060"),   # MLA, a dense first layer, fused kv_b split in two GGUF tensors
    ("gemma-3-12b", "rtx-4090"),        # tied embeddings: a copy on the output layer's GPU
    ("llama-3.1-8b", "rtx-3060"),
])
def test_per_layer_sums_place_every_byte_as_the_tensor_walk(monkeypatch, model, gpu):
    asked = []
    real = layout._place_weights_now
    monkeypatch.setattr(layout, "_place_weights_now", lambda *a: asked.append(a) or real(*a))
    layout._PLACEMENTS.clear()
    # a context no other test asks, so no memo above the placement answers first
    check(CheckRequest(model=model, runtime="llama.cpp", gpu=gpu, ctx="13000", use_measurements=False))
    assert asked
    rng = random.Random(0)
    for spec, weights, where, n_cpu_moe, _, _, _ in asked:
        n = spec.n_layers
        layouts = [where, (None,) * (n + 1), (0,) * (n + 1), tuple(rng.choice((None, 0, 1)) for _ in range(n + 1))]
        for wh in layouts:
            for moe in {n_cpu_moe, 0, 1, n // 2, n + 3}:
                for pad_rows in (False, True):      # a GPU buffer that pads quantized rows (CUDA, SYCL) or not
                    by_tensor, host_kept = layout._place_each_tensor(spec, weights, wh, moe, (), 2, pad_rows)
                    by_layer = layout._place_by_layer(layout._weights_by_layer(spec, weights), wh, moe, pad_rows)
                    assert by_layer == ({d: b for d, b in by_tensor.items() if b}, host_kept)
