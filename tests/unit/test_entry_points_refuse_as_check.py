"""review16c findings 1, 2, 5 and 8: `best`, `cost` and `compare` plan the weights `check` plans for a --quant and
refuse what `check` refuses, instead of answering "nothing runs it" or pricing a pair no engine runs.

Independent sources, written out where each is used:
- Unsloth's qwen3-8b repo publishes UD-Q4_K_XL beside Q4_K_M (huggingface.co/unsloth/Qwen3-8B-GGUF, files
  Qwen3-8B-UD-Q4_K_XL.gguf and Qwen3-8B-Q4_K_M.gguf), and llama.cpp's `-hf <user>/<model>:<tag>` picks the file whose
  name carries the tag (common/arg.cpp, "-hf <user>/<model>[:quant]");
- vLLM has no Metal backend (docs.vllm.ai installation/cpu: on macOS it builds for the CPU only), and mlx-lm runs
  on Apple silicon only (ml-explore/mlx-lm README: "Apple silicon");
- llama.cpp's architecture name for Qwen3-Next is `qwen3next` (src/llama-arch.cpp, LLM_ARCH_QWEN3NEXT), which
  Ollama 0.12.0's vendored llama.cpp (ollama/ollama v0.12.0 llama/llama.cpp/src/llama-arch.cpp) does not list."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.choose import best, cost
from runlocal.compare import compare_devices
from runlocal.errors import InputError
from runlocal.hardware.catalog import find_device
from runlocal.model.catalog import lookup


def test_best_and_cost_rank_an_unsloth_quant_as_check_plans_it():
    """check plans `-q UD-Q4_K_XL` as llama.cpp's Q4_K_M mix (an 8B model's Q4_K_M file is ~5 GB: it fits a 24 GB
    card); best ranked nothing and cost said it does not run whole, because their planner raised on the raw name."""
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", quant="UD-Q4_K_XL", use_measurements=False))
    assert plan.verdict == "fits" and plan.weights.quant == "Q4_K_M"
    spec = lookup("qwen3-8b")
    ranked = best(spec, quant="UD-Q4_K_XL", devices=[find_device("rtx-4090"), find_device("rtx-3060")]).ranked
    assert {r["quant"] for r in ranked} == {"Q4_K_M"} and len(ranked) >= 2     # 5 GB fits 12 GB and 24 GB alike
    run = cost(spec, find_device("rtx-4090"), quant="UD-Q4_K_XL")["run"]
    assert run is not None and run["quant"] == "Q4_K_M" and run["decode_tokens_per_s"] > 0


def test_the_command_fetches_unsloths_file_from_unsloths_repo():
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", quant="UD-Q4_K_XL", use_measurements=False))
    assert "-hf unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL " in plan.command
    run = cost(lookup("qwen3-8b"), find_device("rtx-4090"), quant="UD-Q4_K_XL")["run"]
    assert "-hf unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL " in run["command"]
    plain, _ = check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", quant="Q4_K_M", use_measurements=False))
    assert "-hf unsloth/Qwen3-8B-GGUF:Q4_K_M " in plain.command          # an ordinary type is untouched


def test_a_quant_the_runtime_cannot_load_is_an_error_not_an_empty_ranking():
    """vLLM does not load a GGUF dynamic quant (check refuses it, exit 2); best said "no device runs it"."""
    spec = lookup("qwen3-8b")
    with pytest.raises(InputError, match="^quant: vLLM runs"):
        best(spec, quant="UD-Q4_K_XL", runtime="vllm", devices=[find_device("rtx-4090")])
    with pytest.raises(InputError, match="^quant: vLLM runs"):
        cost(spec, find_device("rtx-4090"), runtime="vllm", quant="UD-Q4_K_XL")


@pytest.mark.parametrize("runtime, device, words", [
    ("vllm", "m3-max-64gb", "vLLM has no Metal backend"),
    ("sglang", "m3-max-64gb", "not planned on Apple M3 Max"),
    ("mlx", "rtx-4090", "mlx runs only on Apple silicon"),
])
def test_compare_and_cost_refuse_the_pairs_check_refuses(runtime, device, words):
    with pytest.raises(InputError, match="^runtime: "):
        check(CheckRequest(model="qwen3-8b", gpu=device, runtime=runtime, use_measurements=False))
    with pytest.raises(InputError, match=words):
        compare_devices(["rtx-4090", "m3-max-64gb"], model="qwen3-8b", runtime=runtime)
    with pytest.raises(InputError, match=words):
        cost(lookup("qwen3-8b"), find_device(device), runtime=runtime)


def test_compare_of_devices_alone_still_needs_no_runtime_pairing():
    rows = compare_devices(["rtx-4090", "m3-max-64gb"], runtime="vllm")        # no model: hardware columns only
    assert [r["id"] for r in rows] == ["rtx-4090", "m3-max-64gb"]


def test_cost_with_a_build_that_cannot_load_the_model_says_so():
    """Ollama 0.12.0's vendored llama.cpp has no `qwen3next` (the docstring's source): the loader's refusal, as best
    and compare give it, not "does not run whole on rtx-4090"."""
    with pytest.raises(InputError, match="Ollama 0.12.0 cannot load this model"):
        cost(lookup("qwen3-next-80b-a3b"), find_device("rtx-4090"), runtime="ollama==0.12.0")


def test_compare_says_the_gpus_tensor_parallel_leaves_idle():
    """review16c finding 10: Qwen3-8B has 32 attention heads (config.json num_attention_heads 32, 8 KV heads); vLLM
    refuses TP 3 ("Total number of attention heads (32) must be divisible by tensor parallel size (3)"), so 3 × RTX
    4090 runs TP 2 and one card holds nothing, as check says; the row's price still counts 3 × 1,599 = 4,797 USD."""
    assert lookup("qwen3-8b").n_heads == 32
    row = compare_devices(["3x4090"], model="qwen3-8b", runtime="vllm")[0]
    assert row["idle_gpus"] == 1 and row["price_usd"] == 3 * 1599
    assert any("1 of the 3 GPUs stays idle" in n and "count all 3" in n for n in row["variant_notes"])
    assert "idle_gpus" not in compare_devices(["2x4090"], model="qwen3-8b", runtime="vllm")[0]
