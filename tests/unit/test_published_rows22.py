"""Published checkpoints added under docs/quantized-checkpoints.md's session-22 rule amendment (review22 #6): each row
cites the public serving line it rests on, and Gemma 3 12B's RedHatAI W4A16 checkpoint is sized by hand from its
config (int4 packed two a byte + a 16-bit scale per 128 inputs on the language model's Linears, the rest 16-bit)."""

from __future__ import annotations

import json
import re
from importlib import resources

from runlocal.model import catalog
from runlocal.runtimes import Settings
from runlocal.weights import estimate, with_default_quant

REPO_ID = {m["alias"]: m["repo_id"] for m in
           json.loads(resources.files("runlocal.data").joinpath("models.json").read_text())["models"]}
ROWS = json.loads(resources.files("runlocal.data").joinpath("published_checkpoints.json").read_text())["models"]
AMENDED = "(listed under docs/quantized-checkpoints.md rule amendment, session 22;"


def test_amended_rows_cite_a_serving_line_naming_the_repo():
    rows = [(alias, r) for alias, rs in ROWS.items() for r in rs if AMENDED in r["source"]]
    assert {alias for alias, _ in rows} == {"gemma-3-12b", "gemma-3-4b", "qwen3.5-9b", "qwen3.5-397b-a17b",
                                            "qwen3.6-27b"}
    for alias, row in rows:
        assert row["source"].startswith(f"https://huggingface.co/{row['repo']} "), row
        assert re.search(r"find_string id \d+", row["source"]), row
        assert row["source"].count(row["repo"]) >= 2, row             # its address, and the quoted line naming it
        base = REPO_ID[alias].split("/")[-1].lower()                  # a conversion of that very checkpoint
        assert row["repo"].split("/")[1].lower().startswith(base), (alias, row["repo"])
        fmt = {"-FP8-dynamic": "fp8-channel", "quantized.w4a16": "w4a16", "-FP8": "fp8-block"}
        assert row["format"] == next(v for k, v in fmt.items() if row["repo"].endswith(k)), row


def test_gemma_3_12b_w4a16_by_hand():
    # google/gemma-3-12b-it text_config: hidden 3840, 48 layers, 16 query / 8 KV heads of 256 (Gemma 3's head_dim),
    # intermediate 15360
    h, layers, q, kv, inter = 3840, 48, 16 * 256, 8 * 256, 15360
    linear = layers * (h * (q + 2 * kv) + q * h + 3 * h * inter)             # q, k, v; o; gate, up, down
    assert linear == 10_758_389_760
    model = catalog.lookup("gemma-3-12b")
    rest = model.params - linear         # embeddings (tied lm_head), norms, the vision tower: planned 16-bit
    want = linear // 2 + linear // 128 * 2 + rest * 2                       # 7.8 GiB
    settings, steps = with_default_quant(model, Settings(runtime="vllm", quant="w4a16"))
    assert "RedHatAI/gemma-3-12b-it-quantized.w4a16" in steps[0].formula
    assert abs(estimate(model, settings.quant).total - want) < 100_000      # within norms' dtype rounding
    assert 7.5 * 2**30 < want < 8 * 2**30                                   # a 12 GB card's checkpoint
