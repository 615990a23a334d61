"""llama.cpp's check whether the fused gated delta net runs where its layer does (src/llama-context.cpp, builds b8233 to
at least b10459: "resolving fused Gated Delta Net support"): a graph of one token per sequence (and, from b8301, one of
16 tokens per sequence) is reserved with the fused op, split by ggml-backend's scheduler, and the fused path is kept
only if every GATED_DELTA_NET node is assigned to its layer's device ("layer %d is assigned to device %s but the fused
Gated Delta Net tensor is assigned to device %s (usually due to missing support)" → "not supported, set to disabled").
With layers on the CPU and a GPU present, a batch of 32 or more tokens is op-offloaded to the GPU and the scheduler
spreads it over the delta net's weightless nodes, so the prompt check fails (ggml-org/llama.cpp#24712, build 10459;
PR #25806 describes the fallback; PR #27877, 2026-08-28, removed it). Read as vendored by ollama/ollama 97962bd03
(b8301). Pure computation, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .arch import GraphParams, build_graph
from .sched import _sched_split, placement_devices, weight_devices


def fused_gdn_lands(model, p: GraphParams, n_tokens: int, n_seqs: int, where: Sequence[int | None], n_gpus: int,
                    overrides: tuple[tuple[str, int | None], ...] = ()) -> bool:
    """Whether every fused delta-net node of the reserved graph (n_tokens over n_seqs sequences, one output each) is
    scheduled on its layer's device; ``where``: each layer's GPU (None: the host), the output layer last."""
    host = n_gpus
    layer_dev = placement_devices(where, model.n_layers, host)
    g = build_graph(model, replace(p, gdn="fused"), n_tokens, n_seqs, n_seqs).g
    full = all(d is not None for d in where)
    nodes, ids, *_ = _sched_split(g, layer_dev, n_tokens < 32 or full, n_backends=n_gpus + 1,
                                  weight_dev=weight_devices(layer_dev, overrides, host))
    delta = [il for il, la in enumerate(model.layers) if la.attention is None]
    placed = [b for t, b in zip(nodes, ids) if t.op == "GATED_DELTA_NET"]
    return all(layer_dev(il) == b for il, b in zip(delta, placed))


def resolve(mode: str, model, p: GraphParams, n_seqs: int, where: Sequence[int | None] | None, n_gpus: int,
            overrides: tuple[tuple[str, int | None], ...] = ()) -> str:
    """The delta-net graphs a build of ``mode`` (runtimes/versions.py llamacpp_gdn) reserves for this placement:
    "fused", "chunked" (prompt unfused), "ar-unfused" (one token unfused) or "unfused". A CPU-only run (``where``
    None) passes both checks: every node is on the CPU."""
    if mode in ("fused", "unfused"):
        return mode
    if where is None:
        ar, chunk = True, mode == "probed"
    else:
        ar = fused_gdn_lands(model, p, n_seqs, n_seqs, where, n_gpus, overrides)
        chunk = mode == "probed" and fused_gdn_lands(model, p, 16 * n_seqs, n_seqs, where, n_gpus, overrides)
    return {(True, True): "fused", (True, False): "chunked", (False, True): "ar-unfused"}.get((ar, chunk), "unfused")
