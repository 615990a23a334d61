"""--quant mxfp4 under MLX on a model with no published MXFP4 conversion: the command is the conversion mlx-lm offers
(ml-explore/mlx-lm d78bf58 mlx_lm/convert.py: ``-q --q-mode`` with choices affine / mxfp4 / nvfp4 / mxfp8) and the
plan counts what it makes, never the 16-bit repo as the model to run (session 14's closing note).

What the conversion makes, from the sources: mlx_lm/utils.py quantize_model's defaults_for_mode gives mxfp4 group 32
and 4 bits and quantizes every Linear / Embedding whose input width divides by 32; mlx/ops.cpp (846d176) fp_quantize
packs the 4-bit e2m1 values in uint32 and keeps one uint8 (e8m0) scale per 32 values, no bias: 17 bytes per 32
weights. Everything else (the norms) stays 16-bit.
"""

from __future__ import annotations

from runlocal.check import check
from runlocal.request import CheckRequest


def _plan(model: str, quant: str):
    plan, _ = check(CheckRequest(model=model, runtime="mlx", quant=quant, gpu="m3-max-36gb", ctx="4096"))
    return plan


def test_a_dense_model_is_converted_with_q_mode_mxfp4():
    p = _plan("llama-3.1-8b", "mxfp4")
    assert p.weights.quant == "mlx-mxfp4"
    assert p.command.startswith("mlx_lm.convert --hf-path meta-llama/Llama-3.1-8B-Instruct -q --q-mode mxfp4 "
                                "--mlx-path ./Llama-3.1-8B-Instruct-mxfp4 && "), p.command
    # the model run is the converted folder, never the 16-bit repo
    assert "mlx_lm.generate --model ./Llama-3.1-8B-Instruct-mxfp4" in p.command
    assert "--model meta-llama/" not in p.command


def test_the_plan_counts_the_weights_the_conversion_makes():
    # Llama-3.1-8B's config.json: vocab 128256, hidden 4096, 32 layers, 32 query / 8 KV heads of 128, FFN 14336,
    # untied LM head. Every matrix's input width (4096 or 14336) divides by 32, so all of them are quantized.
    vocab, h, layers, kv, ffn = 128256, 4096, 32, 8 * 128, 14336
    per_layer = h * h + 2 * kv * h + h * h + 3 * ffn * h          # q, k, v, o, gate, up, down
    matrices = 2 * vocab * h + layers * per_layer                  # + embedding and LM head
    norms = layers * 2 * h + h                                     # two per layer and the final one
    expected = matrices * 17 // 32 + norms * 2                     # 16 B of e2m1 + 1 B of scale per 32 weights
    assert expected == 4_266_467_328
    assert _plan("llama-3.1-8b", "mxfp4").weights.total == expected


def test_a_published_mxfp4_conversion_is_still_the_one_run():
    # gpt-oss has one (data/mlx_repos.json): no conversion, and the planned format stays the published one's
    p = _plan("gpt-oss-20b", "mxfp4")
    assert p.weights.quant == "mxfp4"
    assert p.command.startswith("mlx_lm.generate --model mlx-community/gpt-oss-20b-MXFP4-Q8"), p.command
