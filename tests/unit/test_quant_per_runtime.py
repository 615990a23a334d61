"""Review 16, finding 1: a --quant the chosen runtime cannot load is refused (exit 2, a 422 through the API), not
planned with bytes its printed command never loads; where the runtime can make the format (vLLM's in-flight
bitsandbytes, transformers' BitsAndBytesConfig) the command carries the flag that makes it.

Independent facts, written out here:
- GGUF has no AWQ / GPTQ / NF4 / FP8 / MLX file type: llama-quantize's types (tools/quantize) are Q*/IQ*/F16/BF16/…;
- vLLM docs (features/quantization/bnb): "Inflight quantization: load as 4bit quantization … --quantization
  bitsandbytes"; 8-bit bitsandbytes only from a checkpoint stored so;
- Llama-3.1-8B: 8,030,261,248 parameters; bitsandbytes 4-bit (bitsandbytes/functional.py quantize_4bit, blocksize
  64) packs a Linear weight in n/2 bytes + one f32 absmax per 64 weights, the embeddings and lm_head staying 16-bit.
"""

from __future__ import annotations

import pytest
from asking import run_cli

from runlocal.check import CheckRequest, check
from runlocal.errors import InputError
from runlocal.model.resolve import resolve_model


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
@pytest.mark.parametrize("quant", ["awq", "gptq", "fp8", "int8", "nf4", "w4a16", "mlx-4bit"])
def test_gguf_runtimes_refuse_what_is_not_a_gguf_type(runtime, quant):
    with pytest.raises(InputError, match=rf"^quant: {runtime} runs GGUF file types .*not '{quant}'"):
        check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", runtime=runtime, quant=quant))


@pytest.mark.parametrize("quant", ["q4_k_m", "Q8_0", "fp16", "mxfp4"])
def test_gguf_runtimes_still_take_gguf_types_as_users_spell_them(quant):
    check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", runtime="llama.cpp", quant=quant, ctx="8k"))


@pytest.mark.parametrize(("runtime", "quant"), [("vllm", "Q4_K_M"), ("vllm", "int8"), ("vllm", "mlx-4bit"),
                                                ("sglang", "nf4"), ("sglang", "Q4_K_M"), ("transformers", "Q4_K_M"),
                                                ("transformers", "mlx-8bit")])
def test_server_runtimes_refuse_formats_their_command_does_not_load(runtime, quant):
    with pytest.raises(InputError, match=rf"^quant: .*not '{quant}'"):
        check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", runtime=runtime, quant=quant))


def test_transformers_loads_a_published_awq_checkpoint_and_refuses_one_not_published():
    """review16c finding 6: transformers' from_pretrained loads an AWQ / GPTQ / FP8 checkpoint as stored, through its
    config.json's quantization_config (transformers quantizers/auto.py AutoQuantizationConfig); with one published
    (hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 on the Hub) the plan is that repo, with none known the
    format is refused with the way out."""
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", runtime="transformers", quant="awq", ctx="8k"))
    assert 'from_pretrained("hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"' in plan.command
    assert plan.weights.total < 8 * 2**30 < plan.model.params * 2     # 4-bit, not the 16-bit 15 GiB
    with pytest.raises(InputError, match=r"^quant: .*no gptq checkpoint of qwen3-8b is known here.*not 'gptq'"):
        check(CheckRequest(model="qwen3-8b", gpu="rtx-4090", runtime="transformers", quant="gptq"))


def test_the_cli_says_it_in_one_line_and_exits_2():
    r = run_cli("check", "llama-3.1-8b", "--gpu", "rtx-4090", "--runtime", "llama.cpp", "--quant", "awq")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("error: quant: llama.cpp runs GGUF file types")


def test_vllm_nf4_is_made_at_load_with_bitsandbytes():
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", runtime="vllm", quant="nf4", ctx="8k"))
    assert plan.command.startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct ")
    assert "--quantization bitsandbytes" in plan.command
    # by hand: every Linear of the 32 layers 4-bit + an f32 absmax per 64; embeddings and lm_head (2 × 128,256 ×
    # 4,096) and the norms in 16 bit
    spec = resolve_model("llama-3.1-8b")
    linear = sum(t.numel for t in spec.tensors if t.role in ("attn_q", "attn_k", "attn_v", "attn_o", "ffn_gate",
                                                            "ffn_up", "ffn_down"))
    other = spec.params - linear
    assert other == 2 * 128_256 * 4_096 + (2 * 32 + 1) * 4_096
    by_hand = sum(-(-t.numel // 2) + 4 * -(-t.numel // 64) + 64 for t in spec.tensors
                  if t.role in ("attn_q", "attn_k", "attn_v", "attn_o", "ffn_gate", "ffn_up", "ffn_down")) + 2 * other
    assert plan.weights.total == by_hand
    assert 5.5 < by_hand / 2**30 < 5.7          # the review's ≈ 5.6 GiB, not the 16-bit 14.96 GiB


def test_transformers_nf4_and_int8_carry_their_bitsandbytes_config():
    for quant, words in (("nf4", 'BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")'),
                         ("int8", "BitsAndBytesConfig(load_in_8bit=True)")):
        plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", runtime="transformers", quant=quant,
                                     ctx="8k"))
        assert words in plan.command


def test_a_checkpoint_stored_in_a_format_is_served_as_stored():
    # gpt-oss is published in MXFP4: vLLM loads it as stored, whatever --quant spells it
    check(CheckRequest(model="gpt-oss-20b", gpu="rtx-4090", runtime="vllm", quant="mxfp4", ctx="8k"))
