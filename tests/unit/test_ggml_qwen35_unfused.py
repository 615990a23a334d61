"""Older llama.cpp builds' delta nets for qwen3next / qwen35 / qwen35moe (issue 18 point 1): before b8301 the prompt
graph is the unfused chunked one of src/models/delta-net-base.cpp, before b8233 the one-token graph too
(runtimes/versions.py, measurements/llamacpp_gdn_builds). The graphs are built node for node after the source those
builds vendor; their node counts are checked against a public log of such a build."""

from __future__ import annotations

import json

import pytest
from asking import check_json

from runlocal.evidence import MEASUREMENTS
from runlocal.model.catalog import lookup
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes.ggml.arch import GraphParams, build_graph
from runlocal.runtimes.llamacpp_swa import as_llamacpp_loads

MiB = 1 << 20
PUBLIC = {r["id"]: r for r in map(json.loads, (MEASUREMENTS / "llamacpp_qwen35" / "public.jsonl").read_text().splitlines())}


def nodes(alias: str, gdn: str, kq_mask_f32: bool, n_tokens: int, n_seqs: int) -> int:
    model = gguf_view(as_llamacpp_loads(lookup(alias)), "Q4_K_M")
    p = GraphParams(n_kv=4096, flash_attn=True, kq_mask_f32=kq_mask_f32, gdn=gdn)
    return len(build_graph(model, p, n_tokens, n_seqs, n_tokens).g.nodes)


def test_the_unfused_graphs_have_the_node_counts_an_older_build_logged():
    """ggml-org/llama.cpp#20587 (Qwen3.5-35B-A3B, -c 4096 -np 4 --kv-unified, flash attention, March 2026) logged
    "graph nodes = 6699 (with bs=512), 4389 (with bs=1)": the unfused chunked and one-token graphs (with that build's
    f32 KQ mask and its cast), four sequences of 128 and of 1 token."""
    logged = PUBLIC["issue20587-qwen3.5-35b-a3b"]["logged"]["graph nodes"]
    assert nodes("qwen3.5-35b-a3b", "unfused", True, 512, 4) == logged["512 tokens"]
    assert nodes("qwen3.5-35b-a3b", "unfused", True, 4, 4) == logged["1 token"]
    # the modelled build's fused op: one node and two views where the unfused graphs have dozens per layer
    assert nodes("qwen3.5-35b-a3b", "fused", False, 512, 4) < logged["512 tokens"] - 30 * 90


def ops(alias: str, gdn: str, n_tokens: int) -> list[str]:
    model = gguf_view(as_llamacpp_loads(lookup(alias)), "Q4_K_M")
    return [t.op for t in build_graph(model, GraphParams(n_kv=4096, flash_attn=True, gdn=gdn), n_tokens, 1,
                                      n_tokens).g.nodes]


@pytest.mark.parametrize("alias", ["qwen3.5-27b", "qwen3-next-80b-a3b"])
def test_each_chunk_adds_its_loop_and_one_token_keeps_the_fused_op_from_b8233(alias):
    """The chunked graph's loop runs once per 64 tokens (15 nodes a chunk in every delta-net layer: five slices, four
    matmuls, the state's update and the output's ggml_set_inplace); between b8233 and b8250 ("chunked") the one-token
    graph already has the fused op, one per delta-net layer, and the prompt graph none."""
    n_delta = sum(1 for la in lookup(alias).layers if la.attention is None)
    assert nodes(alias, "unfused", False, 1024, 1) - nodes(alias, "unfused", False, 512, 1) == 15 * 8 * n_delta
    assert ops(alias, "chunked", 1).count("GATED_DELTA_NET") == n_delta
    assert "GATED_DELTA_NET" not in ops(alias, "unfused", 1)
    prompt = ops(alias, "chunked", 512)
    assert "GATED_DELTA_NET" not in prompt and prompt.count("SOLVE_TRI") == n_delta


def test_a_named_older_build_plans_with_its_graph_and_says_so():
    """`runlocal check qwen3.5-35b-a3b --runtime llama.cpp==b8250 …` (#20587's settings, -ngl 20: the 14 delta-net
    layers whose state the log puts on CUDA0): the host's compute buffer is the log's 28.39 MiB, the rules and the
    compute step name the unfused prompt delta net. (CUDA0's 553.01 MiB is not scored:
    the file's quant is not in the log, and the GPU's buffer holds the op-offloaded copy of its expert tensors.) A
    build without the fused-op device check plans the fused graph."""
    args = ("qwen3.5-35b-a3b", "--gpu", "rtx-4090", "-c", "1024", "-np", "4", "--kv-unified", "--ngl", "20",
            "-q", "Q4_K_M", "-fa", "on")
    old = check_json(*args, "--runtime", "llama.cpp==b8250")
    logged = PUBLIC["issue20587-qwen3.5-35b-a3b"]["logged"]
    assert f"{old['memory']['devices'][1]['compute'] / MiB:.2f}" == f"{logged['CUDA_Host compute']:.2f}"
    assert "prompt delta nets unfused" in old["runtime_rules"]
    step = next(s for s in old["explain"] if s["label"] == "compute buffer")
    assert "unfused chunked prompt delta net" in step["formula"]
    for newer in ("llama.cpp==b10460", "llama.cpp"):
        plan = check_json(*args, "--runtime", newer)
        assert "unfused" not in plan["runtime_rules"]
        assert "unfused" not in next(s for s in plan["explain"] if s["label"] == "compute buffer")["formula"]


def test_other_architectures_are_planned_alike_by_old_and_new_delta_net_rules():
    """A llama model has no delta net: b8250 and b8301 differ in nothing that model's plan reads."""
    a = check_json("llama-3.1-8b", "--gpu", "rtx-4090", "-c", "8192", "--runtime", "llama.cpp==b8250")
    b = check_json("llama-3.1-8b", "--gpu", "rtx-4090", "-c", "8192", "--runtime", "llama.cpp==b8301")
    assert a["memory"] == b["memory"]


def _compute_step(*args: str) -> str:
    plan = check_json("qwen3.5-35b-a3b", "--gpu", "rtx-4090", "-q", "Q4_K_M", "-fa", "on", *args)
    return next(s["formula"] for s in plan["explain"] if s["label"] == "compute buffer")


def test_from_b8301_the_fused_op_is_kept_only_where_its_device_check_passes():
    """b8301 to b10459 reserve a 16-token-per-sequence graph with the fused op and keep it only if every fused node runs
    on its layer's device. With delta-net layers on the CPU and 4 slots (64 tokens), the CPU layers' prompt matmuls are
    op-offloaded and the scheduler puts their fused nodes on CUDA0: the check fails ("layer 0 is assigned to device
    CPU but the fused Gated Delta Net tensor is assigned to device CUDA0", ggml-org/llama.cpp#24712 at b10459), the
    prompt graph is the unfused one. One slot (16 tokens, not offloaded), every layer on the GPU, or the modelled build
    (no check, PR #27877): fused."""
    partial = ("-c", "1024", "-np", "4", "--kv-unified", "--ngl", "20")
    assert "unfused chunked prompt delta net" in _compute_step(*partial, "--runtime", "llama.cpp==b8334")
    assert "delta net" not in _compute_step("-c", "4096", "-np", "1", "--ngl", "20", "--runtime", "llama.cpp==b8334")
    assert "delta net" not in _compute_step("-c", "1024", "-np", "4", "--kv-unified", "--ngl", "all",
                                            "--runtime", "llama.cpp==b8334")
    assert "delta net" not in _compute_step(*partial, "--runtime", "llama.cpp==b10460")
    assert "delta net" not in _compute_step(*partial)
