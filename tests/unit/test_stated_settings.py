"""Settings users state that runlocal could not express before (issue 18 point 5): llama.cpp's --no-kv-offload,
vLLM's LoRA adapters. Each test is a user's command as typed and the answer as read (the --json plan)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

GiB = 1 << 30


def check_json(*args: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", *args, "--json"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def check_error(*args: str) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", *args], capture_output=True, text=True,
                       env=env, timeout=120)
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
    assert err == "error: no-kv-offload: a llama.cpp option (llama-server -nkvo); vllm has no such setting"
