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


def test_a_unified_machine_is_judged_against_its_whole_ram():
    """mends21b: Linux's overcommit heuristic compares a mapping with the whole RAM + swap, not the RAM left free
    (mm/util.c __vm_enough_memory, OVERCOMMIT_GUESS: `if (pages > totalram_pages() + total_swap_pages) goto error;`).
    On a DGX Spark (128 GB of unified memory) the CPU side shown is what the GPU side leaves (33.8 GiB here), and the
    condition once said "RAM + swap (34 GiB + swap)". By hand: Qwen3-32B's bf16 weights are 61.0 GiB and the largest
    Hub file is 50 GB = 46.6 GiB; min(61.0, 46.6) = 46.6 ≤ 0.90 × 128 = 115.2, so no file can fail to map and no
    condition is due (on the 34 GiB shown, 46.6 > 0.90 × 33.8 = 30.4 raised it)."""
    # at 0.83, the largest --gpu-memory-utilization that starts there (vLLM refuses its default 0.92: test_vllm_unified.py)
    spark = check_json("qwen3-32b", "--runtime", "vllm", "--gpu", "dgx-spark", "--gpu-memory-utilization", "0.83")
    assert not any("RAM + swap" in c for c in spark["conditions"])
    assert any(s["label"] == "RAM while loading" and s["value"] == "137,438,953,472 B RAM"     # 128 GiB
               for s in spark["explain"]), [s for s in spark["explain"] if s["label"] == "RAM while loading"]
