"""runtimes/llamacpp_refusal.py: llama_init_from_model's refusals (src/llama-context.cpp @0c1e57098) — by hand from
the models' config.json, and against the words llama.cpp logged (measurements/llamacpp_h200/cpu_archs.jsonl)."""

from __future__ import annotations

import json

from runlocal.evidence import MEASUREMENTS
from runlocal.model.catalog import lookup
from runlocal.runtimes.base import Settings
from runlocal.runtimes.llamacpp_refusal import init_refusal


def _s(k: str, v: str) -> Settings:
    return Settings(ctx=4096, cache_type_k=k, cache_type_v=v)


def test_a_head_of_80_refuses_a_32_element_block_with_flash_attention():
    # StableLM-3B-4E1T config.json: hidden_size 2560, 32 heads → 80 per head; q8_0 / q4_0 blocks hold 32: 80 % 32 = 16
    spec = lookup("stablelm-3b-4e1t")
    assert {a.k_dim for a in spec.attention_layers} == {80}
    assert init_refusal(spec, _s("q8_0", "q8_0"), True) == (
        "K cache type q8_0 with block size 32 does not divide n_embd_head_k=80")
    assert init_refusal(spec, _s("f16", "q4_0"), True) == (
        "V cache type q4_0 with block size 32 does not divide n_embd_head_v=80")
    assert init_refusal(spec, _s("f16", "f16"), True) is None
    # flash attention off: the quantized V cache is refused first, as llama_init_from_model checks it first
    assert init_refusal(spec, _s("q8_0", "q8_0"), False) == "quantized V cache requires flash_attn to be enabled"


def test_a_head_of_128_takes_any_block():
    spec = lookup("llama-3.1-8b")      # 4096 / 32 = 128, a multiple of 32
    for t in ("q8_0", "q4_0", "q5_1"):
        assert init_refusal(spec, _s(t, t), True) is None


def test_the_words_are_the_ones_llamacpp_logged():
    recs = [json.loads(x) for x in (MEASUREMENTS / "llamacpp_h200" / "cpu_archs.jsonl").read_text().splitlines()]
    logged = {line.split("llama_init_from_model: ", 1)[1] for r in recs if r["model"] == "stablelm-3b-4e1t"
              and not r["ok"] for line in r["raw_log"] if "does not divide" in line}
    assert logged == {init_refusal(lookup("stablelm-3b-4e1t"), _s("q8_0", "q8_0"), True)}
