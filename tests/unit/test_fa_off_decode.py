"""hardware/fa_off_decode.py by hand, and against run 1's tg32 pairs (measurements/llamacpp_h200/h200_fa_depth.jsonl,
an own H200 run of llama.cpp 0c1e57098: the records carry their measured rates)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from runlocal.evidence.speed_fit import record_model
from runlocal.hardware import fa_off_decode as FD

RUN1 = Path(__file__).resolve().parents[2] / "measurements" / "llamacpp_h200" / "h200_fa_depth.jsonl"


def test_llama_3_1_8b_at_32k_by_hand():
    # Llama-3.1-8B config.json: 32 layers, 32 query heads, 8 KV heads, 128-wide heads; f16 cache
    d = FD.fa_off_decode(record_model("llama-3.1-8b"), 32_768, 4800.0, 0.8, dram_share=0.5)
    scores = 16 * 32 * 32_768 * 32                        # 16 B a score: KQ F32 written, softmax r+w, KQV's read
    reread = (32 / 8 - 1) * 32_768 * 8 * (128 + 128) * 2 * 32     # three more reads of each K/V head a layer
    assert d.score_bytes == scores == 536_870_912
    assert d.reread_bytes == reread == 12_884_901_888
    assert d.seconds_per_token == pytest.approx((scores + 0.5 * reread) / (0.8 * 4800e9))


def test_multi_head_attention_rereads_nothing():
    # Phi-3-mini: 32 query heads, 32 KV heads — each K/V head read by one query head only
    assert FD.fa_off_decode(record_model("phi-3-mini-4k"), 8192, 4800.0, 0.8, swa_full=True).reread_bytes == 0


def test_run_1_tg_pairs_read_closer_than_plans():
    # plans give fa 0 the fa 1 decode figure (ratio 1); the term from the measured fa 1 rate, the entry's share 0.8
    # of the H200's 4,800 GB/s stands in for Fit.decode_eff here (the fit uses the entry's)
    recs = [json.loads(x) for x in RUN1.read_text().splitlines() if x.strip()]
    rate = {(r["model"], r["test"], r["fa"]): r["tokens_per_s"] for r in recs if r["test"].startswith("tg")}
    before, after = [], []
    for (model, test, fa), r1 in rate.items():
        if fa != 1:
            continue
        m = rate[(model, test, 0)] / r1
        depth = int(test.split("@d")[1]) if "@d" in test else 0
        extra = FD.fa_off_decode(record_model(model), depth + 256, 4800.0, 0.8, swa_full=True).seconds_per_token
        before.append(abs(1.0 / m - 1))
        after.append(abs((1 / r1) / (1 / r1 + extra) / m - 1))
    assert len(before) == 20
    assert statistics.median(after) < 0.5 * statistics.median(before)


def test_a_plan_takes_the_windows_llama_cpp_keeps():
    # Phi-3's 2,047 window is dropped by llama.cpp (src/models/phi3.cpp: "Phi SWA is currently disabled"): its 32
    # layers × 32 heads score all 8,192 cells, 16 B each, without swa_full; 32 KV heads: no re-reads
    from runlocal.runtimes.options import LlamaCppOptions

    off = LlamaCppOptions(flash_attn="off")
    assert FD.plan_bytes(record_model("phi-3-mini-4k"), 8192, 0.0, off) == 16 * 32 * 8192 * 32
    # Gemma-3-4B keeps its 1,024 window: 29 sliding layers over pad(1,024 + 512, 256) = 1,536 cells, 5 full over 8,192;
    # 8 query heads, 4 KV heads: one more read of 4 heads × 512 values × 2 B per cell, at the DRAM share
    cells = 29 * 1536 + 5 * 8192
    want = 16 * 8 * cells + FD.GQA_DRAM_SHARE * 1 * cells * 4 * 512 * 2
    assert FD.plan_bytes(record_model("gemma-3-4b"), 8192, 0.0, off) == pytest.approx(want)
    assert FD.plan_bytes(record_model("gemma-3-4b"), 8192, 0.0, LlamaCppOptions(flash_attn="on")) == 0.0
