"""Block-FP8 checkpoints (DeepSeek-V3, Qwen3-*-FP8): config.json's quantization_config {"quant_method": "fp8",
"weight_block_size": [128, 128]} stores each Linear weight in fp8 e4m3 with an f32 ``weight_scale_inv`` of shape
[ceil(out / 128), ceil(in / 128)] beside it (transformers integrations/finegrained_fp8.py; vLLM fp8.py block_quant).
They were read as per-tensor fp8 (one scale per tensor), 0.02 % low."""

import json
from dataclasses import replace

from typer.testing import CliRunner

from runlocal.cli import app
from runlocal.model.catalog import lookup
from runlocal.weights import estimate

# the checkpoint keeps these in bf16: embeddings, norms, the MoE router (mlp.gate) and lm_head
NOT_FP8 = ("embed_tokens", "norm", "mlp.gate.", "lm_head")


def scale_blocks(spec) -> tuple[int, int]:
    """(elements of every fp8 Linear weight, elements of their weight_scale_inv tensors), from the layout above;
    a fused (experts, out, in) tensor holds one scale grid per expert."""
    weights = blocks = 0
    for t in spec.tensors:
        if len(t.shape) < 2 or any(k in t.name for k in NOT_FP8):
            continue
        *experts, out, inp = t.shape
        n = experts[0] if experts else 1
        weights += t.numel
        blocks += n * -(-out // 128) * -(-inp // 128)
    return weights, blocks


def test_deepseek_v3_config_is_read_as_block_fp8_and_its_scales_counted():
    spec = lookup("deepseek-v3")                  # the real config.json (catalog note: its source)
    assert spec.file_quant == "fp8-block"
    w = estimate(spec, None)
    weights, blocks = scale_blocks(spec)
    assert w.quant == "fp8-block" and w.by_kind["fp8-block linear"] == weights + 4 * blocks


def test_deepseek_v3_hub_total_is_the_model_its_mtp_module_and_the_block_scales():
    """The Hub's safetensors total for deepseek-ai/DeepSeek-V3, 684,531,386,000 elements, is the main model
    (671,026,404,352, transformers' count) + the multi-token-prediction layer 61 (one more MoE decoder layer, its
    eh_proj 7168 × 14336 kept in bf16, enorm / hnorm / shared_head.norm and its own embed_tokens and shared_head.head)
    + one e_score_correction_bias of 256 per MoE layer (a buffer in transformers, a tensor in the files: 58 + 1)
    + the weight_scale_inv elements of every fp8 weight — to the element."""
    spec = lookup("deepseek-v3")
    hidden, vocab = 7168, 129280
    _, blocks = scale_blocks(spec)
    last = [t for t in spec.tensors if t.layer == spec.n_layers - 1]          # an MoE layer, as layer 61 is
    _, last_blocks = scale_blocks(replace(spec, tensors=tuple(last)))
    mtp = sum(t.numel for t in last) + hidden * 2 * hidden + 3 * hidden + 2 * vocab * hidden
    biases = (spec.n_layers - 3 + 1) * 256                                    # first_k_dense_replace = 3
    assert spec.params + mtp + biases + blocks + last_blocks == 684_531_386_000


def test_quant_fp8_on_a_block_fp8_checkpoint_serves_it_as_stored():
    out = CliRunner().invoke(app, ["check", "qwen3-30b-a3b-fp8", "--runtime", "vllm", "--gpu", "h100", "-q", "fp8",
                                   "-c", "8192", "--json"])
    plan = json.loads(out.output)
    assert plan["memory"]["weights"] == estimate(lookup("qwen3-30b-a3b-fp8"), "fp8-block").total
    assert "--quantization" not in plan["command"]    # loaded as stored, not quantized again at load
