"""The scheduler simulation beyond one GPU with every weight on it (runtimes/ggml_graph.py): weights placed per
tensor (-ot, --n-cpu-moe) with op offload, several GPUs (--split-mode layer) and pipeline parallelism's copies.
Hand-built graphs whose buffers are worked out by hand from ggml-backend.cpp's rules, and invariants on a real
architecture's graph."""

from __future__ import annotations

import re

import pytest

from runlocal.model import catalog
from runlocal.plan import estimate
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes import Settings, Target
from runlocal.runtimes import ggml_graph as G
from runlocal.runtimes.llamacpp import LlamaCpp

GiB = 1 << 30


def _run(g: G.Graph, n_backends: int, layer_dev, weight_dev=None, n_copies: int = 1):
    """Split g as the scheduler does and place it: each backend's buffer size, and the number of splits."""
    nodes, ids, leafs, leaf_ids, n_splits = G._sched_split(g, layer_dev, pin_norms=False, n_backends=n_backends,
                                                           weight_dev=weight_dev, n_copies=n_copies)
    bufs = [G.Buffer(G.CUDA_ALIGNMENT, G.cuda_alloc_size) for _ in range(n_backends - 1)] + [G.Buffer(G.CPU_ALIGNMENT)]
    sizes = G.allocate(g, bufs, lambda i, t: ids[i], lambda i, t: leaf_ids[i], nodes=nodes, leafs=leafs)
    return sizes, n_splits


def _matmul_graph(n_tokens: int) -> G.Graph:
    # y = w · x: x an f32 graph input [64, n_tokens], w an f32 weight [64, 128] of layer 0
    g = G.Graph()
    x = g.input("f32", (64, n_tokens), "x")
    w = g.weight("f32", (64, 128), "blk.0.ffn_up_exps.weight", layer=0, is_weight=True)
    g.expand(g.mul_mat(w, x))
    return g


HOST1 = 1     # with one GPU, backend 1 is the CPU


def test_a_big_batch_on_a_host_weight_runs_on_the_gpu_with_copies():
    # the weight is in host memory and the batch has 64 ≥ 32 rows: CUDA offloads the MUL_MAT
    # (ggml_backend_sched_backend_id_from_cur, ggml-cuda offload_op). The GPU's buffer holds a copy of w
    # (64·128·4 = 32768 B), a copy of x (64·64·4 = 16384 B) and y (128·64·4 = 32768 B), all alive at y;
    # the host holds the input x
    sizes, n_splits = _run(_matmul_graph(64), 2, lambda il: HOST1)
    assert sizes == [32768 + 16384 + 32768, 16384]
    assert n_splits == 1


def test_a_small_batch_on_a_host_weight_stays_on_the_cpu():
    # 16 rows < 32: the op stays with its weight on the CPU; the host holds x (64·16·4) and y (128·16·4)
    sizes, _ = _run(_matmul_graph(16), 2, lambda il: HOST1)
    assert sizes == [0, 4096 + 8192]


def test_an_override_moves_one_weight_off_its_layers_gpu():
    # layer 0 is on the GPU; without an override the GPU holds x's copy and y, with -ot exps=CPU also w's copy
    on_gpu, _ = _run(_matmul_graph(64), 2, lambda il: 0 if il >= 0 else HOST1)
    assert on_gpu == [16384 + 32768, 16384]
    wd = G.weight_devices(lambda il: 0 if il >= 0 else HOST1, [("exps", None)], HOST1)
    moved, _ = _run(_matmul_graph(64), 2, lambda il: 0 if il >= 0 else HOST1, weight_dev=wd)
    assert moved == [32768 + 16384 + 32768, 16384]


def test_op_offload_goes_to_cuda0_whichever_gpu_holds_the_layer():
    # two GPUs, the layer on GPU 1, its weight in host memory: the first backend that offloads it is CUDA0
    wd = G.weight_devices(lambda il: 1 if il >= 0 else 2, [("exps", None)], 2)
    sizes, _ = _run(_matmul_graph(64), 3, lambda il: 1 if il >= 0 else 2, weight_dev=wd)
    assert sizes == [32768 + 16384 + 32768, 0, 16384]


def _two_layer_graph() -> G.Graph:
    # x (host input, f32 [64, 64]) → y0 = w0 · x on GPU 0 → y1 = w1 · y0 on GPU 1; every tensor 16384 B
    g = G.Graph()
    x = g.input("f32", (64, 64), "x")
    w0 = g.weight("f32", (64, 64), "blk.0.attn_q.weight", layer=0, is_weight=True)
    w1 = g.weight("f32", (64, 64), "blk.1.attn_q.weight", layer=1, is_weight=True)
    g.expand(g.mul_mat(w1, g.mul_mat(w0, x)))
    return g


def test_layers_on_two_gpus_copy_the_activation_across():
    # one copy: GPU 0 holds x's copy and y0, GPU 1 y0's copy and y1, the host x; two splits
    sizes, n_splits = _run(_two_layer_graph(), 3, lambda il: il if il >= 0 else 2)
    assert sizes == [2 * 16384, 2 * 16384, 16384]
    assert n_splits == 2


def test_pipeline_parallelism_keeps_four_copies_of_every_input():
    # GGML_SCHED_MAX_COPIES = 4 (ggml_backend_sched_split_graph passes 5-6): each split input gets 4 copies and each
    # graph input 4 (the original as copy 0), flagged input+output so none is freed or reused:
    # GPU 0: 4 × x + y0, GPU 1: 4 × y0 + y1, host: 4 × x
    sizes, n_splits = _run(_two_layer_graph(), 3, lambda il: il if il >= 0 else 2, n_copies=4)
    assert sizes == [5 * 16384, 5 * 16384, 4 * 16384]
    assert n_splits == 2


def test_n_cpu_moe_patterns_are_llama_cpps():
    # common/common.h LLM_FFN_EXPS_REGEX behind blk\.N: layer 1's experts, not layer 11's, not the shared expert
    (pat1, dev1), = G.n_cpu_moe_overrides(2)[1:]
    assert dev1 is None
    rx = re.compile(pat1)
    assert rx.search("blk.1.ffn_up_exps.weight") and rx.search("blk.1.ffn_gate_up_exps.weight")
    assert rx.search("blk.1.ffn_down_chexps.weight")
    assert not rx.search("blk.11.ffn_up_exps.weight") and not rx.search("blk.1.ffn_up_shexp.weight")
    assert not rx.search("blk.1.ffn_gate_inp.weight")


# --- a real architecture's graph ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def moe():
    return gguf_view(catalog.lookup("qwen3-30b-a3b"), "Q4_K_M")


ARGS = (512, 8192, True)


def test_layers_all_on_gpu0_equal_the_one_gpu_result(moe):
    one = G.simulate_compute_cuda(moe, *ARGS)
    listed = G.simulate_compute_cuda(moe, *ARGS, layer_gpus=[0] * (moe.n_layers + 1), n_gpus=1)
    assert listed == one
    # a second GPU that holds nothing (and no pipeline) gets no buffer and changes nothing on the first
    two = G.simulate_compute_cuda(moe, *ARGS, layer_gpus=[0] * (moe.n_layers + 1), n_gpus=2, pipeline=False)
    assert two == {"CUDA0 compute": one["CUDA0 compute"], "CUDA1 compute": 0,
                   "CUDA_Host compute": one["CUDA_Host compute"]}


def test_layers_on_the_host_by_list_equal_n_gpu_layers(moe):
    # -ngl 10 on one GPU: the last 10 of the n_layer + 1 slots (the output layer first) on the GPU
    n = moe.n_layers
    start = n + 1 - 10
    by_list = G.simulate_compute_cuda(moe, *ARGS, layer_gpus=[0 if il >= start else None for il in range(n + 1)],
                                      n_gpus=1)
    assert by_list == G.simulate_compute_cuda(moe, *ARGS, n_gpu_layers=10)


def _bytes(dtype: str, shape: tuple[int, ...]) -> int:
    # ggml type_traits: bytes per block of elements (q4_K: 144 B per 256, q6_K: 210 per 256, q8_0: 34 per 32 …)
    per = {"q4_k": (256, 144), "q5_k": (256, 176), "q6_k": (256, 210), "q8_0": (32, 34), "f16": (1, 2),
           "bf16": (1, 2), "f32": (1, 4), "q4_0": (32, 18)}[dtype.lower()]
    n = 1
    for d in shape:
        n *= d
    return n // per[0] * per[1]


def test_experts_in_host_memory_put_one_expert_matrix_in_the_gpu_buffer(moe):
    # -ot exps=CPU: every MUL_MAT_ID of a 512-token batch is offloaded, its expert matrix copied into CUDA0's
    # compute buffer, one at a time: the buffer holds the largest (128 experts × 768 × 2048 at its type) and
    # less than two of them on top of the all-on-GPU buffer's working set
    exps = [t for t in moe.tensors if "_exps" in t.name]
    largest = max(_bytes(t.dtype, t.shape) for t in exps)
    assert largest >= 128 * 768 * 2048 * 144 // 256       # at least Q4_K
    plain = G.simulate_compute_cuda(moe, *ARGS)["CUDA0 compute"]
    ot = G.simulate_compute_cuda(moe, *ARGS, overrides=[("exps", None)])
    assert ot["CUDA0 compute"] >= largest
    assert ot["CUDA0 compute"] < plain + 2 * largest
    # --n-cpu-moe over every layer is the same placement as exps=CPU
    assert G.simulate_compute_cuda(moe, *ARGS, overrides=G.n_cpu_moe_overrides(moe.n_layers)) == ot
    # experts on the GPU by an override that names it: as if there were no override
    assert G.simulate_compute_cuda(moe, *ARGS, overrides=[("exps", 0)]) == G.simulate_compute_cuda(moe, *ARGS)


def test_pipeline_copies_only_add(moe):
    # two GPUs, every layer offloaded: the 4 copies keep inputs alive that one copy would free or reuse, so no
    # buffer shrinks, and the host's graph inputs (tokens, positions, KQ mask, KV indices) are held 4 times
    n = moe.n_layers
    where = [0 if il < n // 2 else 1 for il in range(n + 1)]
    one = G.simulate_compute_cuda(moe, *ARGS, layer_gpus=where, n_gpus=2, pipeline=False)
    four = G.simulate_compute_cuda(moe, *ARGS, layer_gpus=where, n_gpus=2)
    assert all(four[k] > one[k] for k in one)
    # the host buffer of the pp graph is its inputs: the tokens (512 × i32), positions (512 × i32), the f16 KQ
    # mask (8192 × 512 × 2 B), the K and V store indices (512 × i64 each with flash attention) and the embeddings
    # input (2048 × 512 × f32) and get_rows' result; 4 copies of the inputs, the get_rows result once
    inputs = 512 * 4 + 512 * 4 + 8192 * 512 * 2 + 2 * 512 * 8 + 2048 * 512 * 4
    assert four["CUDA_Host compute"] >= 4 * inputs


def test_planner_traces_n_cpu_moe_and_two_gpus():
    # LlamaCpp.buffers now takes the simulation for --n-cpu-moe on one GPU and for two GPUs
    spec = catalog.lookup("qwen3-30b-a3b")
    w = estimate(spec, "Q4_K_M")
    lc = LlamaCpp()
    base = Settings(ctx=8192, parallel=1).with_(flash_attn="on", n_gpu_layers=-2)
    one_gpu = [Target("GPU0", "gpu", 80 * GiB), Target("CPU", "cpu", 256 * GiB)]
    _, bufs, steps, _ = lc.buffers(spec, w, base.with_(n_cpu_moe=spec.n_layers), one_gpu)
    step = next(s for s in steps if s.label == "compute buffer")
    assert "ggml-alloc" in step.formula
    view = gguf_view(spec, "Q4_K_M")
    # llama-server's output cap (PR #23861): one slot, one row of logits in the prompt graph
    direct = G.simulate_compute_cuda(view, 512, 8192, True, overrides=[("exps", None)], n_outputs_max=1)
    assert bufs[0].compute == direct["CUDA0 compute"]
    two_gpus = [Target("GPU0", "gpu", 80 * GiB), Target("GPU1", "gpu", 80 * GiB), Target("CPU", "cpu", 256 * GiB)]
    _, bufs2, steps2, _ = lc.buffers(spec, w, base, two_gpus)
    assert any(s.label == "pipeline parallelism" and "simulated" in s.formula for s in steps2)
    assert bufs2[0].compute > 0 and bufs2[1].compute > 0
