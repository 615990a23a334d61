"""MoE prompt speed on CUDA against own H100 runs whose router spreads the tokens over the experts.

A user's question: "how fast will Qwen3-30B-A3B read my prompt on an H100?" The records: measurements/speed/h100/
moe_ubatch_spread.jsonl (run 3, session 13: random embeddings, signed random routers, every other weight zero, so the
tokens spread over the experts as measurements/speed/h100/routing_counts_spread.jsonl counts) and the zero-weight
copies of the same files (moe_ubatch_zero.jsonl, every token to the same experts). runlocal's figures were committed
before the run (h100/moe_ubatch_predictions.jsonl) and scored once (h100/moe_ubatch_compare.txt); these tests keep the
scored result from sliding.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runlocal.cli import app

H100 = Path(__file__).resolve().parents[2] / "measurements" / "speed" / "h100"


def _prefill(*args: str) -> float:
    out = CliRunner().invoke(app, ["check", *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)["speed"]["prefill_tokens_per_s"]


def _measured(file: str, model: str, n_batch: int, n_ubatch: int) -> float:
    rows = [json.loads(line) for line in (H100 / file).read_text().splitlines() if line.strip()]
    return next(r["tokens_per_s"] for r in rows
                if r["model"] == model and r["n_batch"] == n_batch and r["n_ubatch"] == n_ubatch)


def test_qwen3_moe_prompt_on_h100_at_the_default_micro_batch():
    """`runlocal check qwen3-30b-a3b --gpu h100 --quant Q4_0 --ctx 4096 -np 1`: the H100 read a 512-token prompt at
    8,405 tokens/s with the tokens spread over the experts, 14,227 with every token sent to the same 8 (zero weights):
    the plan's figure is the spread one (held out: +2.0 %), not the zero file's."""
    predicted = _prefill("qwen3-30b-a3b", "--gpu", "h100", "--quant", "Q4_0", "--ctx", "4096", "-np", "1")
    spread = _measured("moe_ubatch_spread.jsonl", "qwen3-30b-a3b", 512, 512)
    zero = _measured("moe_ubatch_zero.jsonl", "qwen3-30b-a3b", 512, 512)
    assert spread < 0.7 * zero                       # the padded tiles are real
    assert abs(predicted / spread - 1) < 0.05, (predicted, spread)


def test_smaller_micro_batch_costs_the_moe_prompt_more():
    """`-ub 128`: each expert gets a quarter of the tokens and still runs a whole tile. Measured (spread routing) the
    prompt runs at 0.30× its ub-512 speed; the plan says 0.38× (it also misses that a dense prompt slows at ub 128:
    held out, +27 % at ub 128). Within 30 % of the measured slow-down, and slower, as measured."""
    at_512 = _prefill("qwen3-30b-a3b", "--gpu", "h100", "--quant", "Q4_0", "--ctx", "4096", "-np", "1")
    at_128 = _prefill("qwen3-30b-a3b", "--gpu", "h100", "--quant", "Q4_0", "--ctx", "4096", "-np", "1", "-ub", "128")
    measured_ratio = (_measured("moe_ubatch_spread.jsonl", "qwen3-30b-a3b", 512, 128)
                      / _measured("moe_ubatch_spread.jsonl", "qwen3-30b-a3b", 512, 512))
    assert at_128 < at_512
    assert abs((at_128 / at_512) / measured_ratio - 1) < 0.30, (at_128 / at_512, measured_ratio)
