"""`--gpu 16xh100 --runtime vllm` without --tp/--pp: vLLM's multi-node layout, TP over a node's 8 GPUs × PP over
the nodes (vLLM docs, "Distributed inference and serving"), not one TP group of 16 across the network."""

from __future__ import annotations

from runlocal.check import CheckRequest, check


def _plan(**kw):
    plan, notes = check(CheckRequest(model="llama-3.1-405b", ctx=32768, use_measurements=False, **kw))
    return plan, notes


def test_sixteen_gpus_default_to_tp8_pp2_on_ray():
    plan, notes = _plan(runtime="vLLM", gpu="16xh100")
    assert (plan.settings.tp, plan.settings.pp) == (8, 2)
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2 --distributed-executor-backend ray" in plan.command
    assert any("pipeline parallel 2 across 2 nodes" in n for n in notes)
    # the same as asking for it
    asked, _ = _plan(runtime="vllm", gpu="16xh100", tp=8, pp=2)
    assert plan.to_dict()["memory"] == asked.to_dict()["memory"]
    # Llama 3.1 405B: 126 layers, 8 KV heads, head_dim 128. TP 16 replicates the 8 KV heads (1 per rank, all 126
    # layers); TP 8 × PP 2 holds 1 head per rank on 63 layers: half the KV bytes per token on each GPU
    tp16, _ = _plan(runtime="vllm", gpu="16xh100", tp=16)
    per_rank = lambda p: p.allocation.kv_cache_tokens   # noqa: E731  the pool's tokens at the same KV memory
    assert 1.9 < per_rank(plan) / per_rank(tp16) < 2.1


def test_one_node_and_sglang_keep_one_tp_group():
    plan, _ = _plan(runtime="vllm", gpu="8xh100")
    assert (plan.settings.tp, plan.settings.pp) == (8, 1)
    sg, _ = _plan(runtime="sglang", gpu="16xh100")      # SGLang spans nodes with --tp 16 --nnodes 2
    assert (sg.settings.tp, sg.settings.pp) == (16, 1)


def test_sglang_multi_node_command():
    sg, _ = _plan(runtime="sglang", gpu="16xh100")
    assert sg.command.startswith("python -m sglang.launch_server ")
    assert "--tp-size 16 --nnodes 2 --dist-init-addr <node0>:20000 --node-rank 0" in sg.command
    assert "the same on node 2 with --node-rank 1" in sg.command
    one, _ = _plan(runtime="sglang", gpu="8xh100")
    assert "--nnodes" not in one.command


def test_text_output_folds_identical_gpus_into_one_row():
    import io

    from rich.console import Console

    from runlocal.render.text import render_plan

    plan, _ = _plan(runtime="vllm", gpu="16xh100")
    out = io.StringIO()
    render_plan(plan, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    lines = text.splitlines()
    assert sum("H100" in line and "GiB" in line for line in lines) == 1       # one table row, not 16
    assert sum("H100" in line and "█" in line for line in lines) == 1         # one bar
    assert "16 × NVIDIA H100 SXM 80GB" in text and "each device's" in text
