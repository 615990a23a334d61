"""Review 16, findings 2 and 3: vLLM and SGLang refuse a tensor-parallel size that does not split the attention heads,
a TP group needs one GPU per rank, and neither engine is planned on an Apple-silicon GPU.

Expected texts are vLLM's own (vllm/config/model.py ModelConfig.verify_with_parallel_config:
``f"Total number of attention heads ({total_num_attention_heads}) must be divisible by tensor parallel size
({tensor_parallel_size})."``) with the head counts of each model's config.json written out here; the KV-head rule is
the attention layer's (models/llama.py LlamaAttention in vLLM and SGLang: KV heads ≥ TP → KV % TP == 0, else
TP % KV == 0)."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.errors import InputError
from runlocal.model.resolve import resolve_model
from runlocal.runtimes.tensor_parallel import head_split_refusal, largest_tp, unsplit_heads

# config.json: Llama-3.1-8B num_attention_heads 32, num_key_value_heads 8; Qwen2.5-14B 40 / 8; Qwen2.5-7B 28 / 4
VLLM_MESSAGE = "Total number of attention heads ({h}) must be divisible by tensor parallel size ({tp})."


@pytest.mark.parametrize(("model", "heads", "kv", "tp", "accepted"), [
    ("llama-3.1-8b", 32, 8, 2, True), ("llama-3.1-8b", 32, 8, 3, False), ("llama-3.1-8b", 32, 8, 16, True),
    ("qwen2.5-7b", 28, 4, 4, True), ("qwen2.5-7b", 28, 4, 8, False), ("qwen2.5-7b", 28, 4, 7, False),
    ("qwen2.5-14b", 40, 8, 5, False), ("qwen2.5-14b", 40, 8, 8, True),
])
def test_a_size_is_accepted_exactly_when_the_heads_split(model, heads, kv, tp, accepted):
    spec = resolve_model(model)
    # the rule, by hand: query heads divide by TP; KV heads divide by TP, or TP by them (replicated)
    by_hand = heads % tp == 0 and (kv % tp == 0 if kv >= tp else tp % kv == 0)
    assert by_hand is accepted
    assert (unsplit_heads(spec, tp) is None) is accepted


def test_the_refusal_quotes_vllm_and_names_sizes_it_takes():
    spec = resolve_model("llama-3.1-8b")
    why = head_split_refusal(spec, 3)
    assert why is not None and why.startswith(VLLM_MESSAGE.format(h=32, tp=3))
    assert "--tensor-parallel-size 2 or 4" in why        # 32 % 2 == 32 % 4 == 0, the nearest on each side
    # 40 heads, 8 KV heads at TP 5: the query heads split (40 = 5 × 8), the KV heads do not (8 % 5 = 3)
    kv = unsplit_heads(resolve_model("qwen2.5-14b"), 5)
    assert kv is not None and kv[0].startswith("8 KV heads do not split over tensor parallel size 5")


def test_mla_splits_only_its_query_heads():
    # DeepSeek-R1: 128 query heads, one shared latent per token (not split by TP)
    assert unsplit_heads(resolve_model("deepseek-r1"), 16) is None
    assert unsplit_heads(resolve_model("deepseek-r1"), 3) is not None      # 128 % 3 = 2


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_a_plan_at_a_size_the_engine_refuses_does_not_fit(runtime):
    plan, _ = check(CheckRequest(model="qwen3-8b", gpu="3x4090", runtime=runtime, tp=3, ram="64G"))
    assert plan.verdict == "does_not_fit"
    assert plan.allocation.refusal.startswith(VLLM_MESSAGE.format(h=32, tp=3))


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_three_gpus_without_tp_plan_the_largest_size_that_splits(runtime):
    # 32 heads over 3 GPUs: 3 is refused, 2 is the largest size ≤ 3 dividing 32 (and 8 KV heads)
    assert largest_tp(resolve_model("qwen3-8b"), 3) == 2
    plan, notes = check(CheckRequest(model="qwen3-8b", gpu="3x4090", runtime=runtime, ram="64G"))
    assert plan.settings.tp == 2 and plan.verdict != "does_not_fit"
    note = next(n for n in notes if n.startswith("tensor parallel 2, not 3"))
    assert VLLM_MESSAGE.format(h=32, tp=3) in note and "1 of the 3 GPUs stays idle" in note


@pytest.mark.parametrize(("gpu", "tp", "pp", "ranks", "given"), [("rtx-4090", 3, 1, 3, 1), ("2x4090", 2, 2, 4, 2)])
def test_more_ranks_than_gpus_is_an_input_error(gpu, tp, pp, ranks, given):
    with pytest.raises(InputError, match=rf"^tp: .*needs {ranks} GPUs, one per rank; {given} given"):
        check(CheckRequest(model="llama-3.1-8b", gpu=gpu, runtime="vllm", tp=tp, pp=pp))


@pytest.mark.parametrize(("runtime", "words"), [("vllm", "VLLM_TARGET_DEVICE=cpu"), ("sglang", "SGLANG_USE_MLX=1")])
def test_vllm_and_sglang_are_not_planned_on_apple_silicon(runtime, words):
    # vLLM's docs (installation/cpu, Apple silicon): "On macOS the VLLM_TARGET_DEVICE is automatically set to cpu,
    # which is currently the only supported device"; `best` drops the same pairs (choose.runtime_runs_on)
    from runlocal.choose import runtime_runs_on
    from runlocal.hardware.catalog import parse_device_spec

    assert not runtime_runs_on(runtime, parse_device_spec("m3-max")[0])
    with pytest.raises(InputError, match=rf"^runtime: .*{words}.*not planned on Apple M3 Max"):
        check(CheckRequest(model="llama-3.1-8b", gpu="m3-max", runtime=runtime))


def test_a_cuda_soc_and_a_cpu_run_are_still_planned_for_vllm():
    # a Jetson is unified memory on CUDA, and --gpu none is vLLM's CPU backend: neither is Apple silicon
    check(CheckRequest(model="llama-3.1-8b", gpu="jetson-agx-orin-64gb", runtime="vllm", ctx="8k"))
    check(CheckRequest(model="llama-3.1-8b", gpu="none", runtime="vllm", ram="64G", ctx="8k"))


def test_best_and_compare_plan_three_gpus_as_check_does():
    # `best` / `compare` plan n GPUs at one rank each unless the heads refuse it: the same TP 2 as `check`
    from runlocal.choose import plan_fit
    from runlocal.hardware.targets import targets_from_options

    targets, _ = targets_from_options("3x4090", None, "64G")
    fit = plan_fit(resolve_model("qwen3-8b"), targets, runtime="vllm", ctx=8192, quant="bf16")
    assert fit.runs and "--tensor-parallel-size 2" in fit.command
