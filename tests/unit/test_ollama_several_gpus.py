"""Ollama (v0.30+, llama-server) on several GPUs: server/sched.go selectLlamaServerPlacement (read at v0.30.0 – v0.33.0-rc2
fb30760, runtimes/ollama_placement.py). With num_gpu unset and OLLAMA_SCHED_SPREAD off, a model whose predicted size
(PredictServerVRAM: file + an f16 KV estimate) is within 80 % of one GPU's free memory goes to the best such GPU alone
(discrete first, then the most free); otherwise every GPU goes to llama-server, whose --fit spreads the layers. Each
case is checked against a hand computation of the prediction; no public log of a v0.30+ multi-GPU load was found (the
issue tracker's multi-GPU logs, with `layers.split`, are Ollama's own pre-v0.30 estimator, which is not modelled)."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.runtimes import Target
from runlocal.runtimes.ollama_placement import llama_server_gpus

GiB = 1 << 30
# Qwen3-8B: 36 blocks, 8 KV heads, embedding 4096 / 32 heads = 128: the f16 KV estimate at 8,192 tokens
QWEN3_8B_KV_8K = 2 * 36 * 8 * 128 * 8192 * 2           # 1,207,959,552 B


def plan(gpu=None, vram=None, model="qwen3-8b", ctx=8192, runtime="ollama"):
    p, _ = check(CheckRequest(model=model, runtime=runtime, gpu=gpu, vram=vram, ram="64G", ctx=str(ctx),
                              use_measurements=False))
    return p


def gpu_weights(p):
    return [d.weights for d in p.allocation.devices if d.kind != "cpu"]


def test_the_rule_on_hand_made_gpus():
    a, b = Target("A", "gpu", 10 * GiB), Target("B", "gpu", 16 * GiB)
    # 8 GiB ≤ 80 % of 16 GiB (12.8) but not of 10 GiB (8.0 is not above 8.0: it fits too); the larger free one wins
    assert llama_server_gpus([a, b], 8 * GiB, spread=False)[0] == [b]
    # 13 GiB > 80 % of both (8.0, 12.8): every GPU
    assert llama_server_gpus([a, b], 13 * GiB, spread=False)[0] == [a, b]
    # equal GPUs: the first (betterPlacementGPU's "more free" is strict)
    c = Target("C", "gpu", 10 * GiB)
    assert llama_server_gpus([a, c], 2 * GiB, spread=False)[0] == [a]
    # a discrete GPU before an integrated one with more free memory
    u = Target("U", "unified", 96 * GiB)
    assert llama_server_gpus([u, a], 2 * GiB, spread=False)[0] == [a]
    # OLLAMA_SCHED_SPREAD: every GPU whatever the size
    assert llama_server_gpus([a, b], 1 * GiB, spread=True)[0] == [a, b]


def test_a_model_within_80_percent_of_one_gpu_runs_on_that_gpu_alone():
    # 16 GiB and 24 GiB cards; Qwen3-8B Q4_K_M at 8,192 tokens predicts the file (≈ 4.7 GiB) + 1.125 GiB of f16 KV,
    # within 80 % of either (12.8 / 19.2 GiB): the one with more free memory, GPU #1, gets it all; GPU #0 stays idle
    assert QWEN3_8B_KV_8K / GiB == 1.125
    p = plan(vram="16G,24G")
    assert gpu_weights(p)[0] == 0 and gpu_weights(p)[1] > 4 * GiB
    step = next(s for s in p.steps if s.label == "GPUs given to llama-server")
    assert "that GPU alone" in step.formula and step.value == "GPU #1"
    predicted = float(step.formula.split("predicted ")[1].split(" GiB")[0])
    assert 5.5 < predicted < 6.0 and predicted * GiB <= 16 * GiB * 80 // 100      # 5.80 GiB ≤ 12.8 GiB


def test_a_model_over_80_percent_of_each_gpu_is_spread_by_fit():
    # Llama 3.1 70B Q4_K_M (≈ 39.6 GiB file) on 2 × 24 GiB: above 80 % of either (19.2 GiB) → both GPUs, llama-server's
    # --fit places the layers over them (fit.cpp: back to front, 1 GiB kept free on each)
    p = plan(vram="24G,24G", model="llama-3.1-70b")
    w = gpu_weights(p)
    assert len(w) == 2 and all(x > 15 * GiB for x in w)
    assert any(s.label == "GPUs given to llama-server" and "every GPU" in s.formula for s in p.steps)
    assert all(d.total + (1 << 30) <= d.capacity for d in p.allocation.devices if d.kind != "cpu")


def test_sched_spread_gives_every_gpu(monkeypatch):
    monkeypatch.setenv("OLLAMA_SCHED_SPREAD", "1")
    p = plan(vram="16G,24G")
    assert all(x > 0 for x in gpu_weights(p))
    assert any("OLLAMA_SCHED_SPREAD=1" in s.formula for s in p.steps)


def test_one_gpu_and_old_releases_are_unchanged():
    one = plan(vram="24G")
    assert not any(s.label == "GPUs given to llama-server" for s in one.steps)
    old = plan(vram="16G,24G", runtime="ollama==0.12.4")       # before v0.30: Ollama's own runner split the layers
    assert not any(s.label == "GPUs given to llama-server" for s in old.steps)
