"""RAM while loading (issue 18 point 3; hardware/host_load.py), from users' reports.

vllm-project/vllm#759: `vllm serve` of Qwen/Qwen3-30B-A3B-GPTQ-Int4, whose weights are one 16.9 GB
model.safetensors, stopped while loading: "RuntimeError: unable to mmap 16933256392 bytes from file <…>: Cannot
allocate memory (12)" — safe_open maps the whole file, and Linux refuses a mapping larger than RAM + swap
(measurements/host_load: reproduced on a 23.5 GiB machine, a 22 GiB file opens, a 24 GiB one fails)."""

from __future__ import annotations

from asking import check_json


def test_a_checkpoint_near_the_ram_size_says_what_the_load_depends_on():
    plan = check_json("qwen3-30b-a3b", "--runtime", "vllm", "--quant", "gptq", "--gpu", "rtx-4090", "--ram", "16G",
                      "-c", "8192")
    # vLLM's default --gpu-memory-utilization (0.92 from v0.20.0) is its own budget, the tight line for vLLM
    assert plan["verdict"] == "fits"
    assert any("larger than RAM + swap" in c and "unable to mmap" in c for c in plan["conditions"])
    assert any(s["label"] == "RAM while loading" for s in plan["explain"])


def test_plenty_of_ram_or_a_gguf_runtime_adds_nothing():
    roomy = check_json("qwen3-30b-a3b", "--runtime", "vllm", "--quant", "gptq", "--gpu", "rtx-4090", "--ram", "64G",
                       "-c", "8192")
    assert not any("RAM + swap" in c for c in roomy["conditions"])
    # llama.cpp maps the GGUF read-only and shared (no commit charge), and its CPU share is already on the host
    gguf = check_json("qwen3-30b-a3b", "--gpu", "rtx-4090", "--ram", "16G", "-c", "8192")
    assert not any("RAM + swap" in c for c in gguf["conditions"])
