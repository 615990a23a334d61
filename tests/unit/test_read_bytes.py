"""The bytes a decoded token reads, counted per tensor at its ggml type (hardware/token_work.read_fraction; review22 #10:
the share of the elements had been applied to the bytes, 21 % low on gpt-oss-120b's MXFP4_MOE file)."""

import pytest

from runlocal.check import CheckRequest, check
from runlocal.hardware import token_work as TW
from runlocal.model.catalog import lookup

# ggml block sizes (ggml/src/ggml-common.h): MXFP4 32 elements in 17 bytes (block_mxfp4: e8m0 scale + 16 nibble
# bytes), Q8_0 32 elements in 34 bytes (fp16 scale + 32 int8), F32 4 bytes
MXFP4, Q8_0, F32 = 17 / 32, 34 / 32, 4.0


def _gpt_oss_120b_by_hand() -> tuple[float, float]:
    """(bytes a token reads, bytes stored) of gpt-oss-120b as its MXFP4_MOE GGUF types it (the types the plan's weights
    step lists), from the config: 36 layers, hidden 2,880, 64 query heads × 64 and 8 KV heads × 64, 128 experts of
    width 2,880, 4 a token, a 201,088-token vocabulary, untied head."""
    layers, hidden, q, kv, experts, used, ff, vocab = 36, 2880, 64 * 64, 8 * 64, 128, 4, 2880, 201088
    expert_w = layers * 3 * experts * hidden * ff * MXFP4              # gate, up, down: MXFP4
    expert_b = layers * 3 * experts * ff * F32                         # their biases, one row per expert: F32
    attn = layers * (hidden * q + 2 * hidden * kv + q * hidden) * Q8_0  # q, k, v, output: Q8_0
    head = vocab * hidden * Q8_0                                       # output.weight: Q8_0, read whole
    embed = vocab * hidden * Q8_0                                      # token_embd: one row a token (held apart)
    per_layer_f32 = (64 + q + 2 * kv + hidden                          # attention sinks and biases
                     + experts * hidden + experts                      # router weight and bias
                     + 2 * hidden) * F32                               # two norms
    other = layers * per_layer_f32 + hidden * F32                      # + output_norm
    read = (expert_w + expert_b) * used / experts + attn + head + other
    stored = expert_w + expert_b + attn + head + embed + other
    return read, stored


def test_gpt_oss_120b_reads_its_bytes_by_type():
    model = lookup("gpt-oss-120b")
    read, stored = _gpt_oss_120b_by_hand()
    # review22's 3.53 GB, + 5 MB of routed-expert biases + 55 MB of F32 norms, attention biases and router
    assert read / 1e9 == pytest.approx(3.594, abs=0.001)
    assert TW.read_fraction(model, "MXFP4") == pytest.approx(read / stored, rel=1e-6)
    groups = TW.read_groups(model, "MXFP4")
    assert sum(g.read for g in groups) == pytest.approx(read, rel=1e-9)
    assert sum(g.stored for g in groups) == pytest.approx(stored, rel=1e-9)
    experts = next(g for g in groups if g.label == "routed experts")
    assert experts.types == "MXFP4" and experts.share == pytest.approx(4 / 128)
    # the elements' share, which plans used before: 21 % fewer bytes than a token reads
    assert TW.read_fraction(model) == pytest.approx(0.0439, abs=0.0001)
    assert TW.read_fraction(model) / TW.read_fraction(model, "MXFP4") == pytest.approx(0.775, abs=0.005)


def test_without_types_the_elements_share_is_kept():
    # vLLM's AWQ has no ggml typing (gguf_view answers None): the share of the elements, as before
    model = lookup("qwen3-30b-a3b")
    assert TW.read_groups(model, "awq") is None
    assert TW.read_fraction(model, "awq") == TW.read_fraction(model)


def test_a_dense_model_reads_all_but_its_embedding():
    # llama-3.1-8b, untied: a token reads every byte but the input embedding's, whatever the types
    assert TW.rest_read_fraction(lookup("llama-3.1-8b"), "Q4_K_M") == pytest.approx(1.0)


def test_explain_lists_the_bytes_a_token_reads():
    plan, _ = check(CheckRequest(model="gpt-oss-120b", gpu="dgx-spark", use_measurements=False))
    labels = [st.label for st in plan.steps]
    assert labels.index("bytes read per token") + 1 == labels.index("decode speed")
    step = next(st.formula for st in plan.steps if st.label == "bytes read per token")
    assert "routed experts (MXFP4) 61.07 GB × 0.03125 = 1.909 GB" in step
    assert "attention (Q8_0) 1.015 GB, read whole" in step and "output head (Q8_0) 0.615 GB, read whole" in step
    assert "= 3.594 GB of 63.37 GB" in step
