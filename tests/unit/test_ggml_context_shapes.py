"""A graph shape built once for every context (runtimes/ggml/affine.py: n_kv an affine symbol while the graph is
built and scheduled, ggml-alloc's walk recorded and replayed per context) must size every compute buffer exactly as
building the graph at that context does: many random contexts, asked in a random order, on each architecture the
simulation builds and several placements (the delta-net hybrids too), against the plain simulation. And the
symbol's interval must be sound: every comparison answered at the point asked for is answered the same way
everywhere in the interval left."""

from __future__ import annotations

import random

import pytest

from runlocal.model import catalog
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes import ggml, llamacpp_compute
from runlocal.runtimes.ggml import affine
from runlocal.runtimes.llamacpp_swa import as_llamacpp_loads


def _model(alias: str):
    return gguf_view(as_llamacpp_loads(catalog.lookup(alias)), "Q4_K_M")


def _contexts(rng: random.Random, n: int) -> list[int]:
    """Cells as llama.cpp pads them (multiples of 256) over 256 … 256K, bunched as a search asks (neighbours), plus
    a few that are not padded (another residue class)."""
    out: list[int] = []
    while len(out) < n:
        c = 256 * rng.randint(1, 1024)
        out.append(c)
        if rng.random() < 0.5:
            out.append(c + 256 * rng.randint(1, 8))
        if rng.random() < 0.15:
            out.append(c + rng.randint(1, 255))
    return out[:n]


def _tuple(v):
    return None if v is None else tuple(v)


def _compare(model, placements: dict[str, dict], n: int, seed: int, monkeypatch, fa: bool = True,
             type_k: str = "f16", type_v: str = "f16", swa: bool = False) -> int:
    """Each placement at n random contexts through the shapes and plainly; returns how many contexts were answered
    by a shape built at another context or by a piece (so the test shows the reuse it relies on happened)."""
    rng = random.Random(seed)
    monkeypatch.setattr(affine, "SHAPES", affine.Shapes())
    asked = 0
    for label, kw in placements.items():
        for n_kv in _contexts(rng, n):
            asked += 1
            n_kv_swa = (n_kv if n_kv <= 1536 else 1536) if swa else None
            args = (512, n_kv, fa, 1, 1, type_k, type_v, n_kv_swa)
            monkeypatch.setattr(llamacpp_compute, "CONTEXT_SHAPES", True)
            fast = llamacpp_compute.simulate_now(model, kw.get("n_gpu_layers"), *args,
                                                 layer_gpus=_tuple(kw.get("layer_gpus")), n_gpus=kw.get("n_gpus", 1),
                                                 overrides=kw.get("overrides", ()))
            monkeypatch.setattr(llamacpp_compute, "CONTEXT_SHAPES", False)
            plain = llamacpp_compute.simulate_now(model, kw.get("n_gpu_layers"), *args,
                                                  layer_gpus=_tuple(kw.get("layer_gpus")), n_gpus=kw.get("n_gpus", 1),
                                                  overrides=kw.get("overrides", ()))
            assert fast == plain, (label, n_kv)
    assert affine.SHAPES.made, "no context was answered through a shape"
    assert not affine.SHAPES.fallbacks, affine.SHAPES.fallbacks
    print(f"{asked} contexts: {affine.SHAPES.made} shapes, {affine.SHAPES.stats.symbolic} symbolic walks, "
          f"{affine.SHAPES.stats.from_pieces} answered by a piece")
    return asked - affine.SHAPES.made


def test_a_dense_model_at_random_contexts_is_sized_as_each_context_alone(monkeypatch):
    assert _compare(_model("llama-3.1-8b"), {"all layers on the GPU": dict(n_gpu_layers=-1)}, 10, 1,
                    monkeypatch) >= 5
    assert affine.SHAPES.stats.symbolic and affine.SHAPES.stats.from_pieces, "no piece was made and used"


def test_every_argument_but_the_context_keeps_its_own_shapes(monkeypatch):
    """A build's KQ mask rule (kq_mask_f32: f32 mask cast to f16 before PR #23764) asked in turn with the default at
    the same contexts: each answer is its own plain simulation's (the shape's key holds every argument but n_kv)."""
    m = _model("llama-3.1-8b")
    monkeypatch.setattr(affine, "SHAPES", affine.Shapes())
    for n_kv in (4096, 8192, 4096, 12288, 8192, 12288):
        for f32 in (False, True):
            args = (m, -1, 512, n_kv, True, 1, 1, "f16", "f16", None)
            monkeypatch.setattr(llamacpp_compute, "CONTEXT_SHAPES", True)
            fast = llamacpp_compute.simulate_now(*args, kq_mask_f32=f32)
            monkeypatch.setattr(llamacpp_compute, "CONTEXT_SHAPES", False)
            assert fast == llamacpp_compute.simulate_now(*args, kq_mask_f32=f32), (n_kv, f32)
    assert affine.SHAPES.made >= 2 and not affine.SHAPES.fallbacks


@pytest.mark.slow
def test_a_dense_model_placed_and_cached_otherwise_at_random_contexts(monkeypatch):
    m = _model("llama-3.1-8b")
    n = m.n_layers
    placements = {"partial offload": dict(n_gpu_layers=n // 2),
                  "two GPUs, pipeline parallelism": dict(layer_gpus=[0] * (n // 2) + [1] * (n + 1 - n // 2),
                                                         n_gpus=2)}
    assert _compare(m, placements, 10, 1, monkeypatch) >= 10
    # without flash attention (the KQ scores [n_kv, n_tokens, n_head] are in the walk), a q8_0 cache
    assert _compare(m, {"all": dict(n_gpu_layers=-1)}, 8, 2, monkeypatch, fa=False) >= 3
    assert _compare(m, {"all": dict(n_gpu_layers=-1)}, 8, 3, monkeypatch, type_k="q8_0", type_v="q8_0") >= 3


@pytest.mark.slow
@pytest.mark.parametrize("alias", ["qwen3-30b-a3b", "gemma-3-12b", "deepseek-v2-lite", "granite-4-h-tiny",
                                   "gpt-oss-20b", "qwen3-next-80b-a3b", "qwen3.6-35b-a3b"])
def test_each_architecture_at_random_contexts_is_sized_as_each_context_alone(alias, monkeypatch):
    m = _model(alias)
    n = m.n_layers
    placements: dict[str, dict] = {"all layers on the GPU": dict(n_gpu_layers=-1),
                                   "partial offload": dict(n_gpu_layers=n // 2)}
    if m.n_experts:
        placements["--n-cpu-moe"] = dict(layer_gpus=[0] * (n + 1), n_gpus=1,
                                         overrides=ggml.n_cpu_moe_overrides(2 * n // 3))
    swa = any(a.kind == "sliding" for a in m.attention_layers)
    assert _compare(m, placements, 8, 4, monkeypatch, swa=swa) >= 4
    assert _compare(m, {"all, no flash attention": dict(n_gpu_layers=-1)}, 6, 5, monkeypatch, fa=False,
                    swa=swa) >= 2


def test_a_comparison_holds_on_the_whole_interval_it_leaves():
    """Random affine differences compared at a random point: the sign found holds at every m of the interval."""
    rng = random.Random(7)
    for _ in range(3000):
        x0 = rng.randint(1, 4000)
        dom = affine.Domain(x0, rng.randint(-50, x0), rng.randint(x0, 5000))
        affine._state.domain = dom
        try:
            a, b = rng.randint(-10**6, 10**6), rng.choice([rng.randint(-900, 900) or 1, 256, -256])
            if rng.random() < 0.1:
                a = -b * x0 + rng.randint(-1, 1)         # a root at or next to x0
            d = affine.Aff(a, b)
            kind = rng.choice(["<", "<=", "==", ">", ">="])
            got = {"<": d < 0, "<=": d <= 0, "==": d == 0, ">": d > 0, ">=": d >= 0}[kind]
        finally:
            affine._state.domain = None
        assert dom.lo <= x0 <= dom.hi
        for m in {dom.lo, dom.hi, x0, *(rng.randint(dom.lo, dom.hi) for _ in range(5))}:
            v = a + b * m
            assert {"<": v < 0, "<=": v <= 0, "==": v == 0, ">": v > 0, ">=": v >= 0}[kind] == got, (a, b, x0, m)


def test_arithmetic_that_is_not_affine_is_refused():
    s = affine.Aff(0, 256)
    assert ((s * 3 + 7) // 2).b == 384 and ((s * 3 + 7) // 2).a == 3
    assert (s + 100) % 128 == 100
    for bad in (lambda: s * s, lambda: s // 3, lambda: s % 3, lambda: range(s), lambda: [0][s], lambda: 5 // s):
        with pytest.raises(affine.NotAffine):
            bad()
