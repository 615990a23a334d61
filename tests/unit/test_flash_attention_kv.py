"""The KV read of a decoded token on CUDA with flash attention on is the cache's bytes once (build_era.py: factor 1,
derived) on every NVIDIA card, HBM included — an A100's entry kept a factor of 4.2 fitted on 2024 builds without flash
attention, so at 32K it read slower than an RTX 3090 of half the bandwidth (review14b finding 1). With flash attention
off the F32 scores' passes are added only where the factor is the derived one: a fitted factor holds them already
(finding 2: they were counted twice)."""

from __future__ import annotations

import re

from runlocal.check import check
from runlocal.request import CheckRequest

# llama-3.1-8b: 32 layers × 8 KV heads × 128 dims × (K + V) × 2 bytes = 131,072 B a token; at half of 32K, 16,384 tokens
KV_AT_16K = 32 * 8 * 128 * 2 * 2 * 16384              # 2.147 GB
# flash attention off: 4 passes × 4 B × 32 query heads per cached token per layer
SCORES_AT_16K = 4 * 4 * 32 * 16384 * 32               # 0.268 GB


def _decode(gpu: str, fa: str):
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu=gpu, quant="Q4_K_M", ctx="32768", flash_attn=fa))
    step = next(s for s in plan.to_dict()["explain"] if s["label"] == "decode speed")
    m = re.search(r"\+ ([\d.]+)×([\d.]+) GB KV\)", step["formula"])
    assert m, step["formula"]
    return plan.speed["decode_tokens_per_s"], float(m.group(1)), float(m.group(2)) * 1e9


def test_an_hbm_card_reads_the_kv_once_with_flash_attention():
    a100, factor, kv = _decode("a100", "auto")
    rtx3090, _, _ = _decode("rtx-3090", "auto")
    assert factor == 1.0 and abs(kv - KV_AT_16K) < 0.01e9
    assert a100 > rtx3090          # 2,039 GB/s against 936 GB/s, the same model and context


def test_flash_attention_off_scores_are_counted_once():
    _, factor, kv = _decode("a100", "off")
    assert factor > 1.0 and abs(kv - KV_AT_16K) < 0.01e9          # the fitted factor holds them
    _, factor, kv = _decode("rtx-3090", "off")
    assert factor == 1.0 and abs(kv - (KV_AT_16K + SCORES_AT_16K)) < 0.01e9


def test_explain_says_scores_only_where_they_are_counted():
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="a100", quant="Q4_K_M", ctx="32768", flash_attn="off"))
    step = next(s for s in plan.to_dict()["explain"] if s["label"] == "decode speed")
    assert "flash attention off" not in step["formula"]
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-3090", quant="Q4_K_M", ctx="32768", flash_attn="off"))
    step = next(s for s in plan.to_dict()["explain"] if s["label"] == "decode speed")
    assert "0.27 GB of it the F32 attention scores" in step["formula"]
