"""--quant under MLX means mlx-lm's own formats: "4bit" is how mlx-community names its conversions (mlx_lm.convert -q,
affine, group 64), not bitsandbytes' nf4 that the same word means under transformers; formats mlx-lm cannot load are
refused instead of planned with the 16-bit repo in the command (review14 finding 5)."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.errors import InputError
from runlocal.request import CheckRequest


def _plan(quant, model="qwen3-30b-a3b", runtime="mlx"):
    plan, _ = check(CheckRequest(model=model, runtime=runtime, quant=quant, gpu="m3-max-36gb", ctx="8192"))
    return plan


def test_4bit_is_the_mlx_community_conversion():
    four, named = _plan("4bit"), _plan("mlx-4bit")
    assert four.weights.quant == named.weights.quant == "mlx-4bit"
    assert four.weights.total == named.weights.total
    # data/mlx_repos.json: the published conversion people download, not the 16-bit Qwen/Qwen3-30B-A3B (~61 GB)
    assert "mlx-community/Qwen3-30B-A3B-4bit" in four.command
    assert _plan("8bit").weights.quant == "mlx-8bit"
    # 4 bits + a 16-bit scale and bias per 64 weights ≈ 4.5 bits: a 30.5B model's linear weights ≈ 17 GB, not nf4's
    assert 15e9 < four.weights.total < 19e9


@pytest.mark.parametrize("quant", ["nf4", "Q4_K_M", "awq", "int8", "7bit"])
def test_formats_mlx_lm_cannot_load_are_refused_naming_the_field(quant):
    with pytest.raises(InputError, match=rf"^quant: mlx-lm runs MLX's own .* not '{quant}'$"):
        _plan(quant)


def test_the_word_keeps_its_meaning_elsewhere():
    assert _plan("4bit", model="llama-3.1-8b", runtime="transformers").weights.quant == "nf4"
