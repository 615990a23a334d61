"""llama.cpp's --cpu-moe / -cmoe and -ncmoe (common/arg.cpp; PR #14992 added --cpu-moe, PR #15077 --n-cpu-moe and
the short forms), and -b / -ub in the printed command: a user pastes llama.cpp's own flags and gets the command back
with the batch sizes the plan's compute buffers were simulated at."""

from __future__ import annotations

import re

from runlocal.check import check
from runlocal.request import CheckRequest

MOE = "qwen3-30b-a3b"     # 48 layers, routed experts in every layer


def _plan(**kw):
    plan, _ = check(CheckRequest(model=MOE, gpu="rtx-3060", ram="64G", **kw))
    return plan


def _device_bytes(plan):
    return [(d.name, d.weights, d.kv_cache, d.compute) for d in plan.allocation.devices]


def test_cpu_moe_places_what_n_cpu_moe_over_every_layer_places():
    # PR #14992: --cpu-moe overrides "\\.ffn_(up|down|gate)_exps" (every layer's experts) to the CPU buffer; PR #15077's
    # --n-cpu-moe N overrides "blk\\.i\\.ffn_(up|down|gate)_exps" for i < N: with N = the layer count the same tensors
    every = _plan(cpu_moe=True)
    layers = every.model.n_layers
    assert layers == 48
    assert _device_bytes(every) == _device_bytes(_plan(n_cpu_moe=layers))
    cpu = next(d for d in every.allocation.devices if d.kind == "cpu")
    gpu = next(d for d in every.allocation.devices if d.kind != "cpu")
    assert cpu.weights > 10 * gpu.weights      # the routed experts are ~95 % of a Q4_K_M 30B-A3B's bytes


def test_cpu_moe_command_says_cpu_moe_and_older_builds_get_its_override():
    assert re.search(r"(^| )--cpu-moe( |$)", _plan(cpu_moe=True).command)
    assert "--n-cpu-moe" not in _plan(cpu_moe=True).command
    # before b6089 (no --n-cpu-moe / --cpu-moe in the build) the override the switch stands for, every layer
    old, _ = check(CheckRequest(model=MOE, gpu="rtx-3060", ram="64G", cpu_moe=True, runtime="llama.cpp==b6000"))
    assert "--cpu-moe" not in old.command
    assert r"-ot '\.ffn_(up|down|gate)_exps=CPU'" in old.command


def test_batch_sizes_reach_the_command_only_when_not_llama_servers_defaults():
    # common/common.h: n_batch 2048, n_ubatch 512
    plain = _plan(ctx="8192").command
    assert " -b " not in plain and " -ub " not in plain
    big = _plan(ctx="8192", batch=4096, ubatch=4096).command
    assert " -b 4096 " in big + " " and " -ub 4096" in big
    assert " -ub 1024" in _plan(ctx="8192", ubatch=1024).command


def test_cpu_moe_on_a_dense_model_says_it_moves_nothing():
    _, notes = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-3060", cpu_moe=True))
    assert any(n.startswith("--cpu-moe: llama-3.1-8b has no routed experts") for n in notes)
    _, notes = check(CheckRequest(model=MOE, gpu="rtx-3060", cpu_moe=True))
    assert not any("no routed experts" in n for n in notes)
