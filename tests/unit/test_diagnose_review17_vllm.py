"""review17 finding 4: a vLLM log whose KV pool came out negative gets fixes sized from that signed figure.

vLLM's pool is gpu_memory_utilization × total − weights − non-torch − the profiling pass's activation peak (V0
vllm/worker/worker.py determine_num_available_blocks prints each term). The texts:
- V0_PUBLIC: the memory lines of vllm-project/vllm#13882 as pasted there (measurements/public_errors/round6.jsonl,
  record vllm-13882, tuning);
- V1_PUBLIC: vllm-project/vllm-ascend#9372's two log lines (round44.jsonl, record vllm-ascend-9372, tuning);
- V0_REVIEW: review17's /tmp/r17_vllm2.log, a realistic text written from vLLM 0.7.3's messages (not a public paste).
"""

from __future__ import annotations

from pathlib import Path

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes
from runlocal.units import GiB

FIXTURES = Path(__file__).parents[1] / "fixtures/review17"      # README.md there says where each text is from
V0_PUBLIC = (FIXTURES / "vllm-13882_memory_lines.log").read_text()
V1_PUBLIC = (FIXTURES / "vllm-ascend-9372.log").read_text()
V0_REVIEW = (FIXTURES / "vllm_0.7.3_negative_pool.log").read_text()


def answer(text: str) -> dict:
    return with_computed_fixes(diagnose_text(text), None)


def extract(text: str) -> dict:
    return answer(text)["extracted"]


def test_the_signed_pool_is_read():
    assert extract(V0_PUBLIC)["kv_cache_bytes"] == round(-1.05 * GiB)
    assert extract(V1_PUBLIC)["kv_cache_bytes"] == round(-0.87 * GiB)
    assert extract(V0_PUBLIC)["vllm_activation_peak_bytes"] == round(1.42 * GiB)


def test_v0_public_share_and_activation_by_hand():
    doc = answer(V0_PUBLIC)
    assert doc["category"] == "vllm_no_kv_blocks"
    first, second = doc["fixes"][:2]
    # by hand: 5.60 − 5.20 − 0.03 − 1.42 = −1.05 GiB; the activation peak must lose 1.05 of 1.42 GiB:
    # keep (1.42 − 1.05) / 1.42 = 0.2606 → at most 26 % of the tokens per pass
    assert "--max-num-batched-tokens N" in first["command"] and "N ≤ 0.26 ×" in first["command"]
    assert "26%" in first["title"]
    # the pool reaches zero at 0.70 + 1.05 / 8.00 = 0.83125 of the GPU; the first hundredth above it is 0.84
    assert "0.831" in second["title"]
    assert "0.84 ≤ U ≤ 0.98" in second["command"]
    # the knowledge base's generic 0.95 (0.25 × 8 GiB = 2 GiB would cover the 1.05 GiB) turns the knob the computed
    # share already sets, so it gives way to it
    assert not any(f["command"].endswith("--gpu-memory-utilization 0.95") for f in doc["fixes"])


def test_review_log_095_is_not_offered():
    # by hand (review17 §4): 0.95 × 23.64 = 22.46; 22.46 − 14.99 − 0.12 − 7.69 = −0.34 GiB: vLLM still refuses
    doc = answer(V0_REVIEW)
    assert not any("--gpu-memory-utilization 0.95" in f["command"] for f in doc["fixes"])
    first = doc["fixes"][0]
    # the activation peak first: keep (7.69 − 1.52) / 7.69 = 0.802 → 80 %
    assert "--max-num-batched-tokens" in first["command"] and "N ≤ 0.80 ×" in first["command"]
    # zero at 0.90 + 1.52 / 23.64 = 0.9643
    share = next(f for f in doc["fixes"] if "--gpu-memory-utilization U" in f["command"])
    assert "0.964" in share["title"] and "0.97 ≤ U ≤ 0.98" in share["command"]


def test_without_the_cards_size_the_095_fix_says_which_cards_it_starts_on():
    # V1 prints only the pool: 0.95 − vLLM's default 0.90 = 0.05 of the card must cover 0.87 GiB → a card above
    # 0.87 / 0.05 = 17.4 GiB
    doc = answer(V1_PUBLIC)
    share = next(f for f in doc["fixes"] if "--gpu-memory-utilization 0.95" in f["command"])
    assert "17.4 GiB" in share["effect"] and "0.87" not in share["title"]


def test_a_share_above_098_is_not_offered_and_says_why():
    # 0.90 + 2.00 / 23.64 = 0.9846 > 0.98: no share command
    text = V0_REVIEW.replace("is -1.52GiB", "is -2.00GiB")
    doc = answer(text)
    said = next(f for f in doc["fixes"] if "cannot make room" in f["title"])
    assert said["command"] == "" and "0.985" in said["title"] and "CUDA graphs" in said["effect"]
    assert not any("--gpu-memory-utilization" in f["command"] for f in doc["fixes"])


def test_a_named_model_gives_the_share_that_holds_one_request():
    # vllm#13882's lines under a V0 config line naming a catalog model (written here in vLLM's llm_engine.py format,
    # not part of that paste). Qwen2.5-7B: 28 layers × 4 KV heads × 128 × 2 (K, V) × 2 B = 57,344 B a token; a
    # 4,096-token request is 224 MiB; 0.70 + (1.05 GiB + 224 MiB) / 8 GiB = 0.70 + 0.13125 + 0.02734 = 0.8586 → 0.86
    config = ("INFO 02-26 09:53:01 llm_engine.py:232] Initializing a V0 LLM engine (v0.7.3) with config: "
              "model='Qwen/Qwen2.5-7B-Instruct', speculative_config=None, tokenizer='Qwen/Qwen2.5-7B-Instruct', "
              "max_seq_len=4096, tensor_parallel_size=1, kv_cache_dtype=auto\n")
    doc = answer(config + V0_PUBLIC)
    first = doc["fixes"][0]
    assert first["command"] == "vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization 0.86", first
    assert "224 MiB" in first["effect"] and "0.859" in first["effect"]


def test_v1_debug_lines_give_the_share():
    # review17's V1 log (vllm_0.10.1_negative_pool.log) with V1's debug line above the pool (gpu_worker.py, written here
    # in its format): 71.20 GiB requested / 0.90 = 79.11 GiB; the pool reaches zero at 0.90 + 1.52 / 79.11 = 0.919
    text = (FIXTURES / "vllm_0.10.1_negative_pool.log").read_text().replace(
        "INFO 11-20 10:12:52 [gpu_worker.py:276] Available KV",
        "DEBUG 11-20 10:12:52 [gpu_worker.py:272] Initial free memory: 79.11 GiB; Requested memory: 0.90 (util), "
        "71.20 GiB\nINFO 11-20 10:12:52 [gpu_worker.py:276] Available KV")
    doc = answer(text)
    share = next(f for f in doc["fixes"] if "--gpu-memory-utilization" in f["command"])
    assert "0.919" in share["title"] and "0.92 ≤ U ≤ 0.98" in share["command"], share


def test_the_logs_own_tokens_per_pass_give_the_number():
    # the command the reporter ran, above review17's 0.7.3 log: 8,192 tokens per pass × 0.80 = 6,553.6 → 6,400
    # (a multiple of 256)
    doc = answer("$ vllm serve MODEL --max-num-batched-tokens 8192\n" + V0_REVIEW)
    act = next(f for f in doc["fixes"] if "--max-num-batched-tokens" in f["command"] and "chunked" in f["command"])
    assert act["command"].endswith("--enable-chunked-prefill --max-num-batched-tokens 6400"), act
    assert "8,192 → 6,400" in act["effect"]
