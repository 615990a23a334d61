"""Weight bytes under weight-only formats, checked against the real libraries where they run on CPU."""

import pytest

from runlocal.model.spec import ModelSpec, TensorInfo
from runlocal.quant.formats import estimate_weights

H, FF, V, L = 256, 512, 1000, 2


def tiny_llama_spec() -> ModelSpec:
    t = [TensorInfo("model.embed_tokens.weight", (V, H), "embed"), TensorInfo("lm_head.weight", (V, H), "lm_head"),
         TensorInfo("model.norm.weight", (H,), "norm")]
    for i in range(L):
        p = f"model.layers.{i}."
        t += [TensorInfo(p + "self_attn.q_proj.weight", (H, H), "attn_q", i),
              TensorInfo(p + "self_attn.k_proj.weight", (H // 2, H), "attn_k", i),
              TensorInfo(p + "self_attn.v_proj.weight", (H // 2, H), "attn_v", i),
              TensorInfo(p + "self_attn.o_proj.weight", (H, H), "attn_o", i),
              TensorInfo(p + "mlp.gate_proj.weight", (FF, H), "ffn_gate", i),
              TensorInfo(p + "mlp.up_proj.weight", (FF, H), "ffn_up", i),
              TensorInfo(p + "mlp.down_proj.weight", (H, FF), "ffn_down", i),
              TensorInfo(p + "input_layernorm.weight", (H,), "norm", i),
              TensorInfo(p + "post_attention_layernorm.weight", (H,), "norm", i)]
    return ModelSpec(id="tiny", architecture="LlamaForCausalLM", family="llama", hidden_size=H, n_layers=L, n_heads=4,
                     vocab_size=V, layers=(), tensors=tuple(t))


def test_awq_by_hand():
    # one 256×256 linear, group 128: qweight 256·256/2 B, scales 2 groups × 256 × 2 B, zeros 2 × 256 / 2 B
    spec = ModelSpec(id="x", architecture="X", family="x", hidden_size=H, n_layers=1, n_heads=1, vocab_size=1,
                     layers=(), tensors=(TensorInfo("q", (256, 256), "attn_q", 0),))
    assert estimate_weights(spec, "awq").total == 256 * 256 // 2 + 2 * 256 * 2 + 2 * 256 // 2
    # GPTQ adds an int32 g_idx per input feature
    assert estimate_weights(spec, "gptq").total == estimate_weights(spec, "awq").total + 256 * 4


def test_published_checkpoint_layouts_by_hand():
    # a 300 × 256 linear as the published vLLM checkpoints store it (data/published_checkpoints.json "formats")
    spec = ModelSpec(id="x", architecture="X", family="x", hidden_size=H, n_layers=1, n_heads=1, vocab_size=1,
                     layers=(), tensors=(TensorInfo("q", (300, 256), "attn_q", 0),))
    # Qwen3-*-FP8: 1 byte a weight + an f32 weight_scale_inv per 128 × 128 block (3 × 2 blocks)
    assert estimate_weights(spec, "fp8-block").total == 300 * 256 + 4 * 3 * 2
    # RedHatAI -FP8-dynamic: 1 byte a weight + an f32 scale per output channel
    assert estimate_weights(spec, "fp8-channel").total == 300 * 256 + 4 * 300
    # RedHatAI quantized.w4a16: 4 bits a weight, a 16-bit scale per 128 inputs and output, a 2 × int64 shape
    assert estimate_weights(spec, "w4a16").total == 300 * 256 // 2 + 2 * 300 * 2 + 16


def test_float_widths():
    spec = tiny_llama_spec()
    assert estimate_weights(spec, "bf16").total == 2 * spec.params
    assert estimate_weights(spec, "fp32").total == 4 * spec.params


@pytest.fixture(scope="module")
def saved_tiny(tmp_path_factory):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=H, intermediate_size=FF, num_hidden_layers=L, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=V)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)
    return path


def _real_bytes(model) -> int:
    """Every byte the quantized model holds: parameters plus bitsandbytes' quantization state."""
    total = 0
    for p in model.parameters():
        total += p.numel() * p.element_size()
        qs = getattr(p, "quant_state", None)
        if qs is not None:
            total += qs.absmax.numel() * qs.absmax.element_size() + qs.code.numel() * 4
            if qs.nested:
                total += qs.state2.absmax.numel() * 4 + qs.state2.code.numel() * 4
        scb = getattr(p, "SCB", None)
        if scb is not None:
            total += scb.numel() * scb.element_size()
    return total


@pytest.mark.parametrize("quant, kwargs", [
    ("nf4", dict(load_in_4bit=True, bnb_4bit_quant_type="nf4")),          # transformers' default: no double quant
    ("nf4-dq", dict(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True)),  # QLoRA setting
    ("fp4", dict(load_in_4bit=True, bnb_4bit_quant_type="fp4")),
    ("int8", dict(load_in_8bit=True)),                                     # LLM.int8(): + one f32 scale per row
])
def test_bitsandbytes_matches_the_real_library(saved_tiny, quant, kwargs):
    torch = pytest.importorskip("torch")
    pytest.importorskip("bitsandbytes")
    pytest.importorskip("accelerate")
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    model = AutoModelForCausalLM.from_pretrained(saved_tiny, device_map="cpu", quantization_config=BitsAndBytesConfig(
        bnb_4bit_compute_dtype=torch.bfloat16, **kwargs), dtype=torch.bfloat16)
    assert estimate_weights(tiny_llama_spec(), quant).total == _real_bytes(model)
