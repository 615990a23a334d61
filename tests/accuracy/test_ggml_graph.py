"""ggml-alloc simulation (runtimes/ggml_graph.py): the allocator on hand-checkable graphs, and the reserved
graph's compute buffers against what llama.cpp logged (measurements/llamacpp/data)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from runlocal.runtimes import ggml_graph as G
from runlocal.runtimes.llamacpp import context_sizes, swa_cells

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "measurements" / "llamacpp" / "data"
MiB = 1 << 20


# --- the dynamic allocator ---------------------------------------------------------------------------

def test_best_fit_takes_the_smallest_free_block_that_fits():
    a = G.DynAllocator(32)
    offs = [a.alloc(n) for n in (64, 32, 128, 32, 96)]     # 0, 64, 96, 224, 256
    assert offs == [0, 64, 96, 224, 256]
    a.free(0, 64)          # hole of 64 at 0
    a.free(96, 128)        # hole of 128 at 96
    assert a.alloc(64) == 0            # the 64-byte hole, not the 128-byte one
    assert a.alloc(100) == 96          # 100 → 128 aligned: the 128-byte hole
    assert a.max_size == 352


def test_the_last_block_is_used_only_when_no_hole_fits():
    a = G.DynAllocator(32)
    a.alloc(64)
    b = a.alloc(64)
    a.alloc(64)
    a.free(b, 64)          # hole of 64 at 64; the open end starts at 192
    assert a.alloc(96) == 192          # too big for the hole: grows the buffer
    assert a.max_size == 288
    assert a.alloc(64) == 64           # fits the hole


def test_freed_neighbours_merge():
    a = G.DynAllocator(32)
    x, y, z = a.alloc(64), a.alloc(64), a.alloc(64)
    a.alloc(32)                        # keeps the open end away from z
    a.free(x, 64)
    a.free(z, 64)
    a.free(y, 64)                      # joins x's and z's holes into one of 192
    assert a.blocks[0] == [0, 192]
    assert a.alloc(192) == 0


def test_in_place_reuse_of_a_single_child_parent():
    g = G.Graph()
    x = g.input("f32", (256,), "x")                   # 1 KiB input
    y = g.unary("SCALE", x)                           # x's only child: takes over x's memory
    w = g.weight("f32", (256,), "w")
    z = g.mul(y, w)                                   # and again
    g.expand(z)
    assert G.allocate(g, [G.Buffer()]) == [1024]


def test_no_reuse_when_the_parent_has_another_child_or_is_an_output():
    g = G.Graph()
    x = g.input("f32", (256,), "x")
    y = g.unary("SCALE", x)
    z = g.add(y, x)                                   # x still needed: y gets new room; z reuses y
    g.expand(z)
    assert G.allocate(g, [G.Buffer()]) == [2048]

    g = G.Graph()
    x = g.input("f32", (256,), "x")
    x.flags |= G.FLAG_OUTPUT
    g.expand(g.unary("SCALE", x))
    assert G.allocate(g, [G.Buffer()]) == [2048]


def test_views_cost_nothing_and_keep_their_source_alive():
    g = G.Graph()
    x = g.input("f32", (64, 4), "x")                  # 1 KiB at 0
    a = g.mul_mat(g.weight("f32", (64, 64), "w"), x)  # 1 KiB at 1024; x freed after it: a hole at 0
    v = g.view(a, (64, 2), (a.nb[1],), 0)             # a view of a: no room of its own, a stays alive
    b = g.cont(v)                                     # 512 B into the hole at 0; then a is freed (its view's
    #                                                   last use) and merges with the rest of the hole
    c = g.mul_mat(g.weight("f32", (64, 64), "w2"), b)  # 512 B at 512, below a's old top
    g.expand(c)
    assert G.allocate(g, [G.Buffer()]) == [2048]


def test_layer_devices_offload_the_output_layer_first():
    dev = G._layer_devices(32, 16)                     # llama.cpp: i_gpu_start = 32 + 1 - 16 = 17
    assert [dev(il) for il in (-1, 0, 16, 17, 31, 32)] == [G.HOST, G.HOST, G.HOST, G.GPU, G.GPU, G.GPU]
    all_ = G._layer_devices(32, -1)
    assert [all_(il) for il in (-1, 0, 32)] == [G.HOST, G.GPU, G.GPU]   # token embeddings stay on the CPU
    none = G._layer_devices(32, 0)
    assert {none(il) for il in range(-1, 33)} == {G.HOST}


# --- against llama.cpp's logs ----------------------------------------------------------------------

CASES = [
    # (data file, record key) — dense with/without flash attention, fused QKV + gate_up, MoE, quantized KV,
    # several streams
    ("cpu.jsonl", "cpu|llama-3.1-8b|q4_0|ngl=0|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=512|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cpu.jsonl", "cpu|phi-3-mini-4k|q4_0|ngl=0|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=16384|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=q8_0|type_v=q8_0"),
    ("cpu.jsonl", "cpu|qwen3-30b-a3b|q4_0|ngl=0|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=10000|n_seq_max=3|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|qwen3-30b-a3b|q4_0|ngl=all|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|qwen3-30b-a3b|q4_0|ngl=all|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=4|n_ubatch=512|swa_full=False|type_k=q8_0|type_v=q8_0"),
    # gemma3: iSWA caches, Q/K norms; several streams, a full-size SWA cache, quantized K with Hadamard inputs
    ("cpu.jsonl", "cpu|gemma-3-4b|q4_0|ngl=0|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=4|n_ubatch=512|swa_full=False|type_k=q8_0|type_v=q8_0"),
    ("cpu.jsonl", "cpu|gemma-3-4b|q4_0|ngl=0|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=65536|n_seq_max=1|n_ubatch=512|swa_full=True|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|gemma-3-4b|q4_0|ngl=all|flash_attn=off|kv_unified=False|n_batch=2048|n_ctx=16384|n_seq_max=8|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    # gemma2: attention soft-capping (no flash attention) and the final soft-cap
    ("cpu.jsonl", "cpu|gemma-2-9b|q4_0|ngl=0|flash_attn=off|kv_unified=False|n_batch=2048|n_ctx=16384|n_seq_max=1|n_ubatch=1024|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|gemma-2-9b|q4_0|ngl=all|flash_attn=on|kv_unified=True|n_batch=2048|n_ctx=10000|n_seq_max=3|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    # gpt-oss: sinks, biased MoE with MXFP4 experts, SOFTMAX_WEIGHT gating
    ("cpu.jsonl", "cpu|gpt-oss-20b|q4_0|ngl=0|flash_attn=off|kv_unified=False|n_batch=2048|n_ctx=16384|n_seq_max=4|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|gpt-oss-20b|q4_0|ngl=all|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=bf16|type_v=bf16"),
    # deepseek2: MLA over a K-only cache, with and without flash attention
    ("cpu.jsonl", "cpu|deepseek-v2-lite|q4_0|ngl=0|flash_attn=off|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|deepseek-v2-lite|q4_0|ngl=all|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=16384|n_seq_max=8|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    # granitehybrid: mamba2 layers with recurrent state, attention layers, MoE with shared experts
    ("cpu.jsonl", "cpu|granite-4.0-h-tiny|q4_0|ngl=0|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=4|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|granite-4.0-h-tiny|q4_0|ngl=all|flash_attn=off|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=1|n_ubatch=2048|swa_full=False|type_k=f16|type_v=f16"),
    # partial offload and -ngl 0 on the CUDA build: op offload of CPU-weight ops, weight / KV copies, splits
    ("cuda.jsonl", "cuda|llama-3.1-8b|q4_0|ngl=half|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=65536|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=q8_0|type_v=q8_0"),
    ("cuda.jsonl", "cuda|llama-3.1-8b|q4_0|ngl=0|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|qwen3-4b|q4_0|ngl=0|flash_attn=off|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|qwen3-30b-a3b|q4_0|ngl=half|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=4|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|phi-3-mini-4k|q4_0|ngl=half|flash_attn=off|kv_unified=False|n_batch=2048|n_ctx=65536|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|gemma-3-4b|q4_0|ngl=half|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=65536|n_seq_max=1|n_ubatch=512|swa_full=True|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|gemma-2-9b|q4_0|ngl=half|flash_attn=off|kv_unified=False|n_batch=2048|n_ctx=65536|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|gpt-oss-20b|q4_0|ngl=half|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=65536|n_seq_max=4|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|deepseek-v2-lite|q4_0|ngl=0|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=1|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
    ("cuda.jsonl", "cuda|granite-4.0-h-tiny|q4_0|ngl=half|flash_attn=on|kv_unified=False|n_batch=2048|n_ctx=4096|n_seq_max=4|n_ubatch=512|swa_full=False|type_k=f16|type_v=f16"),
]


def _records() -> dict[str, dict]:
    out = {}
    for name in {f for f, _ in CASES}:
        path = DATA / name
        if path.exists():
            for line in path.read_text().splitlines():
                rec = json.loads(line)
                out[rec["key"]] = rec
    return out


@pytest.fixture(scope="module")
def specs():
    from runlocal.evidence.zero_gguf import write_model
    from runlocal.model.gguf import read_gguf

    out = {}
    with tempfile.TemporaryDirectory() as d:
        for model in {k.split("|")[1] for _, k in CASES}:
            out[model] = read_gguf(write_model(model, Path(d), "q4_0")["path"])   # header only (sparse)
    return out


@pytest.mark.parametrize("file,key", CASES, ids=[k.split("|")[1] + ":" + k.split("|")[0] for _, k in CASES])
def test_matches_logged_compute_buffers(file, key, specs):
    recs = _records()
    if key not in recs:
        pytest.skip(f"{file} not present")
    rec = recs[key]
    spec = specs[rec["model"]]
    n_seq = rec["n_seq_max"]
    c = context_sizes(rec["n_ctx_requested"] // n_seq, n_seq, rec["n_batch"], rec["n_ubatch"], rec["kv_unified"])
    n_kv = c.n_ctx_seq if c.n_stream > 1 else c.n_ctx
    windows = [a.window for a in spec.attention_layers if a.kind == "sliding" and a.window]
    n_kv_swa = swa_cells(c, windows[0], rec["swa_full"]) if windows else None
    kw = dict(n_seqs=n_seq, n_stream=c.n_stream, type_k=rec["type_k"], type_v=rec["type_v"], n_kv_swa=n_kv_swa)
    fa = rec["flash_attn"] != "off"
    splits: list[int] = []
    if rec["backend"] == "cpu":
        got = {"CPU compute": G.simulate_compute(spec, c.n_ubatch, n_kv, fa, **kw)}
    else:
        got = G.simulate_compute_cuda(spec, c.n_ubatch, n_kv, fa, n_gpu_layers=rec["n_gpu_layers"], n_splits=splits, **kw)
    for buf, bytes_ in got.items():
        assert f"{bytes_ / MiB:.2f}" == f"{rec['buffers'][buf]:.2f}", buf
    # the scheduler's split counts for the pp and tg graphs, as sched_reserve logged them
    line = next((x for x in rec.get("raw_log", []) if "graph" in x and "splits = " in x), None)
    if splits and line is not None:
        m = re.search(r"splits = (\d+)(?: / (\d+))?", line)
        assert m is not None
        assert splits == [int(m.group(1)), int(m.group(2) or m.group(1))]
