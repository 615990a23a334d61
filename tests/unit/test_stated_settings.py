"""Settings users state that runlocal could not express before (issue 18 point 5): llama.cpp's --no-kv-offload,
vLLM's LoRA adapters. Each test is a user's command as typed and the answer as read (the --json plan)."""

from __future__ import annotations

from asking import check_json, run_cli

GiB = 1 << 30


def check_error(*args: str) -> str:
    r = run_cli("check", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    return r.stderr.strip()


def by_kind(plan: dict) -> dict[str, dict]:
    return {d["kind"]: d for d in plan["memory"]["devices"]}


def test_no_kv_offload_keeps_the_kv_cache_in_system_ram():
    """"llama-server -m Qwen3-8B-Q4_K_M.gguf -c 32768 -ngl 99 -nkvo on my RTX 3060: where does the KV cache go?"
    All of it to system RAM (src/llama-kv-cache.cpp: without offload_kqv every layer's cache gets the CPU buffer
    type): 36 layers × 8 KV heads × 128 × (K + V) × 2 B × 32,768 cells = 4.5 GiB, none of it on the card."""
    kv = 36 * 8 * 128 * 2 * 2 * 32768
    offloaded = check_json("qwen3-8b", "--gpu", "rtx-3060", "-c", "32768", "--ngl", "all", "-np", "1")
    kept = check_json("qwen3-8b", "--gpu", "rtx-3060", "-c", "32768", "--ngl", "all", "-np", "1", "-nkvo")
    assert by_kind(offloaded)["gpu"]["kv_cache"] == kv and by_kind(offloaded)["cpu"]["kv_cache"] == 0
    assert by_kind(kept)["gpu"]["kv_cache"] == 0 and by_kind(kept)["cpu"]["kv_cache"] == kv
    assert by_kind(kept)["gpu"]["weights"] == by_kind(offloaded)["gpu"]["weights"]
    assert "--no-kv-offload" in kept["command"] and "--no-kv-offload" not in offloaded["command"]
    assert any("--no-kv-offload" in step["label"] for step in kept["explain"])


def test_no_kv_offload_is_refused_for_an_engine_without_it():
    err = check_error("qwen3-8b", "--gpu", "rtx-4090", "--runtime", "vllm", "--no-kv-offload")
    assert err == "error: no-kv-offload: an option of llama.cpp (--no-kv-offload); vllm has no such setting"


def test_vllm_lora_slots_come_out_of_the_kv_pool():
    """"vllm serve meta-llama/Llama-3.1-8B-Instruct --enable-lora --max-loras 4 --max-lora-rank 64 on a 4090: how
    much KV is left?" vLLM preallocates, per linear layer and output slice, A (loras × rank × input) and B
    (loras × output × rank) in bf16 (vllm/lora/layers/base_linear.py create_lora_weights). For Llama-3.1-8B
    (hidden 4,096, 32 heads / 8 KV heads of 128, MLP 14,336, 32 layers) that is per layer
    qkv 3·64·4096 + (4096 + 2·1024)·64, o 64·4096 + 4096·64, gate/up 2·64·4096 + 2·14336·64,
    down 64·14336 + 4096·64 = 5,242,880 elements; × 32 layers × 4 slots × 2 B = 1,342,177,280 B, taken from the
    KV pool (the slots are made in load_model, before the KV cache is sized)."""
    per_layer = (3 * 64 * 4096 + (4096 + 2 * 1024) * 64) + (64 * 4096 + 4096 * 64) \
        + (2 * 64 * 4096 + 2 * 14336 * 64) + (64 * 14336 + 4096 * 64)
    slots = per_layer * 32 * 4 * 2
    base = ("llama-3.1-8b", "--gpu", "rtx-4090", "--runtime", "vllm", "--ctx", "8192")
    plain = check_json(*base)
    lora = check_json(*base, "--enable-lora", "--max-loras", "4", "--max-lora-rank", "64")
    step = next(s for s in lora["explain"] if s["label"] == "LoRA slots")
    assert step["value"] == f"{slots:,} B" == "1,342,177,280 B"
    gpu, gpu0 = by_kind(lora)["gpu"], by_kind(plain)["gpu"]
    assert gpu["weights"] - gpu0["weights"] == slots
    # vLLM's KV blocks: the pool shrinks by the slots (to within one 16-token block of 128 KiB/token)
    per_token = 32 * 8 * 128 * 2 * 2
    assert abs((plain["kv_cache_tokens"] - lora["kv_cache_tokens"]) * per_token - slots) <= 16 * per_token
    assert "--enable-lora --max-loras 4 --max-lora-rank 64" in lora["command"]


def test_lora_rank_vllm_does_not_accept_is_refused():
    err = check_error("llama-3.1-8b", "--gpu", "rtx-4090", "--runtime", "vllm", "--max-lora-rank", "24")
    assert err == "error: max-lora-rank: vLLM accepts 1, 8, 16, 32, 64, 128, 256, 320, 512, got 24"
    err = check_error("llama-3.1-8b", "--gpu", "rtx-4090", "--enable-lora")
    assert err.startswith("error: enable-lora:") and "llama.cpp" in err


def test_data_parallel_with_expert_parallel_shards_only_the_experts():
    """"vllm serve Qwen/Qwen3-30B-A3B -tp 2 -dp 2 --enable-expert-parallel on 4 × RTX 4090: what does each card
    hold?" Two replicas; attention and embeddings split over the replica's 2 ranks, the MoE layers over all 4
    (vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make). Experts from config.json:
    48 layers × 128 experts × 3 matrices × 2,048 × 768 × 2 B (bf16) = 57,982,058,496 B."""
    experts = 48 * 128 * 3 * 2048 * 768 * 2
    dp = check_json("qwen3-30b-a3b", "--gpu", "4xrtx-4090", "--runtime", "vllm", "--ctx", "8192",
                    "-dp", "2", "--enable-expert-parallel")
    tp4 = check_json("qwen3-30b-a3b", "--gpu", "4xrtx-4090", "--runtime", "vllm", "--ctx", "8192")
    total = tp4["memory"]["weights"]             # all four cards' weights under TP 4 = the whole model
    per_card = [d["weights"] for d in dp["memory"]["devices"] if d["kind"] == "gpu"]
    assert len(per_card) == 4
    expected = (total - experts) / 2 + experts / 4
    assert abs(per_card[0] - expected) / expected < 0.001
    assert "--tensor-parallel-size 2 --data-parallel-size 2 --enable-expert-parallel" in dp["command"]
    assert any(s["label"] == "data parallel" for s in dp["explain"])


def test_data_parallel_is_refused_for_an_engine_runlocal_does_not_plan_it_for():
    err = check_error("qwen3-30b-a3b", "--gpu", "4xrtx-4090", "-dp", "2")
    assert err == "error: data-parallel-size: an option of vllm (--data-parallel-size); llama.cpp has no such setting"
