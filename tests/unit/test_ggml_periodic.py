"""The reduced graph (ggml/periodic.py: runs of repeated layers cut to a few periods, the cut checked on ggml-alloc's
walk) must give every compute buffer exactly as the whole graph does, on each architecture the simulation builds and
each kind of layer placement: all layers on the GPU, a partial offload (CPU layers with op offload), --n-cpu-moe,
two GPUs with pipeline parallelism, sliding-window layers, MLA and a hybrid recurrent model."""

from __future__ import annotations

import pytest

from runlocal.model import catalog
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes import ggml
from runlocal.runtimes.ggml import periodic, sched
from runlocal.runtimes.llamacpp_swa import as_llamacpp_loads


@pytest.fixture(autouse=True)
def _cut_wherever_possible(monkeypatch):
    """Exactness is what is tested here: leave layers out wherever a run allows, not only where it pays."""
    monkeypatch.setattr(periodic, "MIN_LEFT_OUT", 1)
    monkeypatch.setattr(periodic, "MIN_LEFT_OUT_SHARE", 0)


def _model(alias: str):
    return gguf_view(as_llamacpp_loads(catalog.lookup(alias)), "Q4_K_M")


def _placements(n: int) -> dict[str, dict]:
    return {
        "all layers on the GPU": dict(n_gpu_layers=-1),
        "partial offload": dict(n_gpu_layers=n // 2),
        "no layer offloaded (op offload only)": dict(n_gpu_layers=0),
        "--n-cpu-moe": dict(layer_gpus=[0] * (n + 1), n_gpus=1, overrides=ggml.n_cpu_moe_overrides(2 * n // 3)),
        "-ot: the experts of a few middle layers in host memory": dict(
            layer_gpus=[0] * (n + 1), n_gpus=1,
            overrides=tuple((f"blk\\.{i}\\.ffn_(up|down|gate)_exps", None) for i in range(n // 3, n // 3 + 3))),
        "two GPUs, pipeline parallelism": dict(layer_gpus=[0] * (n // 2) + [1] * (n + 1 - n // 2), n_gpus=2),
        "two GPUs and the CPU": dict(layer_gpus=[None] * (n // 4) + [0] * (n // 3) + [1] * (n + 1 - n // 4 - n // 3),
                                     n_gpus=2),
    }


# (alias, also without flash attention, has a run long enough to cut: Q4_K_M's q6_k layers every third and the
# iSWA pattern make gpt-oss-20b's period 6 layers, too few of them; granite-4's mamba/attention pattern is irregular)
CASES = [("llama-3.1-8b", True, True), ("qwen3-30b-a3b", True, True), ("gemma-3-12b", True, True),
         ("gpt-oss-20b", False, False), ("deepseek-v3", False, True), ("granite-4-h-tiny", False, False)]


def _simulate(model, skip: bool, monkeypatch, fa: bool = True, **kw) -> tuple[dict[str, int], int]:
    """The buffers, and how many reserved graphs were simulated reduced and checked."""
    monkeypatch.setattr(periodic, "SKIP", skip)
    sched._BUILT.clear()
    reduced = 0
    placed = sched._placed

    def spy(model, p, nt, n_seqs, n_out, layers, cuts, sched_args, buffers):
        nonlocal reduced
        got = placed(model, p, nt, n_seqs, n_out, layers, cuts, sched_args, buffers)
        reduced += layers is not None
        return got
    monkeypatch.setattr(sched, "_placed", spy)
    out = ggml.simulate_compute_cuda(model, 512, 8192, fa, **kw)
    monkeypatch.setattr(sched, "_placed", placed)
    return out, reduced


@pytest.mark.parametrize("alias, without_fa, cut", CASES)
def test_reduced_graph_gives_the_whole_graphs_buffers(alias, without_fa, cut, monkeypatch):
    model = _model(alias)
    n_reduced = 0
    for name, kw in _placements(model.n_layers).items():
        for fa in (True, False) if without_fa else (True,):
            whole, _ = _simulate(model, False, monkeypatch, fa, **kw)
            got, reduced = _simulate(model, True, monkeypatch, fa, **kw)
            assert got == whole, f"{alias}, {name}, flash attention {fa}"
            n_reduced += reduced
    # the check is not vacuous: graphs of the models with a long run were simulated reduced (all layers on one
    # device and the op-offload-only placement at least: both graphs of each)
    assert n_reduced >= 4 if cut else n_reduced == 0, alias


def _device_blind(monkeypatch):
    """Layer kinds without the weights' devices: a wrong partition into runs."""
    kinds = periodic.layer_kinds
    monkeypatch.setattr(periodic, "layer_kinds",
                        lambda m, ld, wd: [(k[0], k[1], k[2], (), k[4]) for k in kinds(m, ld, wd)])


def test_layers_whose_weights_sit_elsewhere_are_not_cut(monkeypatch):
    """Which layers may be left out rests on the layer kinds: three middle layers of qwen3-235b whose experts -ot
    keeps in host memory (their copies into the GPU's compute buffer are its peak) are a run of their own. Told
    apart by no more than their weights' devices, they would be left out, and the GPU buffer would come out
    about half of what ggml-alloc needs — the kinds must keep them."""
    model = _model("qwen3-235b-a22b-2507")
    n = model.n_layers
    kw = dict(layer_gpus=[0] * (n + 1), n_gpus=1,
              overrides=tuple((f"blk\\.{i}\\.ffn_(up|down|gate)_exps", None) for i in range(40, 43)))
    whole, _ = _simulate(model, False, monkeypatch, **kw)
    got, reduced = _simulate(model, True, monkeypatch, **kw)
    assert got == whole and reduced
    _device_blind(monkeypatch)
    blind, _ = _simulate(model, True, monkeypatch, **kw)
    assert blind["CUDA0 compute"] < 0.6 * whole["CUDA0 compute"]


def test_a_cut_that_does_not_repeat_is_refused(monkeypatch):
    """The walk's check refuses a cut whose periods before and after differ: with device-blind kinds, llama-3.1-8b
    half offloaded is one run, cut between its CPU and its GPU layers; the cut is refused and the buffers stay
    exact."""
    model = _model("llama-3.1-8b")
    n = model.n_layers
    _device_blind(monkeypatch)
    kinds = periodic.layer_kinds
    monkeypatch.setattr(periodic, "layer_kinds", lambda m, ld, wd: [(k[0], 0, *k[2:]) for k in kinds(m, ld, wd)])
    refused = []
    placed = sched._placed

    def watch(*args):
        try:
            return placed(*args)
        except periodic.NotRepeated:
            refused.append(args[6])
            raise
    monkeypatch.setattr(sched, "_placed", watch)
    sched._BUILT.clear()
    got = ggml.simulate_compute_cuda(model, 512, 8192, True, n_gpu_layers=n // 2)
    monkeypatch.setattr(periodic, "SKIP", False)
    sched._BUILT.clear()
    assert got == ggml.simulate_compute_cuda(model, 512, 8192, True, n_gpu_layers=n // 2)
    assert refused


@pytest.mark.parametrize("alias", ["deepseek-v3", "qwen3-30b-a3b", "gemma-3-12b"])
def test_cpu_only_reduced_graph_gives_the_whole_graphs_buffer(alias, monkeypatch):
    """The CPU build (arch.reserve_sizes) leaves repeated layers out the same way."""
    model = _model(alias)
    for fa in (True, False):
        monkeypatch.setattr(periodic, "SKIP", False)
        whole = ggml.simulate_compute(model, 512, 8192, fa)
        monkeypatch.setattr(periodic, "SKIP", True)
        assert ggml.simulate_compute(model, 512, 8192, fa) == whole, (alias, fa)


def _ot(first: int) -> tuple[tuple[str, None], ...]:
    """-ot keeping the experts of three layers from ``first`` in host memory."""
    return tuple((f"blk\\.{i}\\.ffn_(up|down|gate)_exps", None) for i in range(first, first + 3))


def _renamings(monkeypatch) -> list[dict]:
    """Each renaming sched._placed makes: a reduced graph built for other layers scheduled for these."""
    seen: list[dict] = []
    for_layers = sched._for_layers

    def spy(args, to):
        seen.append(to)
        return for_layers(args, to)
    monkeypatch.setattr(sched, "_for_layers", spy)
    return seen


def test_a_reduced_graph_built_for_one_placement_serves_the_next(monkeypatch):
    """A fit tries many placements of one graph shape: the reduced graph is built once per sequence of layer shapes
    and scheduled for each placement with its layers renamed (sched._for_layers) — the device boundary moved, or an
    -ot rule naming other layers. Each placement's buffers must be the whole graph's, asked in a row with the
    built graphs kept."""
    model = _model("qwen3-30b-a3b")
    n = model.n_layers
    asks = [dict(n_gpu_layers=k) for k in (n // 3, n // 2, 2 * n // 3)]
    asks += [dict(layer_gpus=[0] * (n + 1), n_gpus=1, overrides=_ot(first)) for first in (12, 21, 30)]
    whole = [_simulate(model, False, monkeypatch, **kw)[0] for kw in asks]
    monkeypatch.setattr(periodic, "SKIP", True)
    sched._BUILT.clear()
    renamed = _renamings(monkeypatch)
    got = [ggml.simulate_compute_cuda(model, 512, 8192, True, **kw) for kw in asks]
    assert got == whole
    assert len(renamed) >= 4 and any(set(to) != set(to.values()) for to in renamed)


def test_a_renamed_graph_must_rename_its_weights_too(monkeypatch):
    """What the renaming must carry: an -ot rule matches weights by name, so a graph built with the rule at blk.40–42
    and scheduled for the rule at blk.52–54 must ask for the devices of blk.52–54's weights. Renaming the layers'
    devices but not the weights' names leaves those experts on the GPU, and qwen3-235b's GPU buffer (their copies
    into it are its peak) comes out far too small."""
    model = _model("qwen3-235b-a22b-2507")
    n = model.n_layers
    kw = dict(layer_gpus=[0] * (n + 1), n_gpus=1)
    whole, _ = _simulate(model, False, monkeypatch, overrides=_ot(52), **kw)
    monkeypatch.setattr(periodic, "SKIP", True)
    sched._BUILT.clear()
    renamed = _renamings(monkeypatch)
    ggml.simulate_compute_cuda(model, 512, 8192, True, overrides=_ot(40), **kw)
    assert ggml.simulate_compute_cuda(model, 512, 8192, True, overrides=_ot(52), **kw) == whole
    assert any(to.get(40) == 52 for to in renamed)
    sched._BUILT.clear()
    ggml.simulate_compute_cuda(model, 512, 8192, True, overrides=_ot(40), **kw)
    for_layers = sched._for_layers
    monkeypatch.setattr(sched, "_for_layers", lambda args, to: {**for_layers(args, to), "weight_dev": args["weight_dev"]})
    wrong = ggml.simulate_compute_cuda(model, 512, 8192, True, overrides=_ot(52), **kw)
    assert wrong["CUDA0 compute"] < 0.6 * whole["CUDA0 compute"]
