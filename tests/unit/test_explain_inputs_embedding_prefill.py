"""fixes19a's leftovers in --explain, by hand for llama-3.1-8b Q4_K_M on an RTX 4090:
- llama.cpp keeps tok_embd in host memory whatever -ngl (src/llama-model.cpp: the input layer's buffer is the CPU's),
  so the weights step names it with its bytes: 128,256 × 4,096 = 525,336,576 weights at Q4_K (144 B per 256, the
  quantizer's type for token_embd in Q4_K_M) = 295,501,824 B — the whole CPU RAM buffer when every layer is on the GPU;
- the prefill's FLOPs per token show their inputs: 2 × (8,030,261,248 params − 525,336,576 embedding − 266,240 1-D
  norms (65 × 4,096: 32 × attn_norm, 32 × ffn_norm, output_norm)) = 2 × 7,504,658,432 = 15.01 GFLOP."""

from __future__ import annotations

from runlocal.check import CheckRequest, check


def _steps(**kw):
    plan = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ram="32G", use_measurements=False, **kw))[0]
    return {st.label: st for st in plan.steps}, plan


def test_the_weights_step_names_the_token_embedding_and_its_bytes():
    steps, plan = _steps()
    embd = 128_256 * 4_096 * 144 // 256
    assert embd == 295_501_824
    weights = next(st for st in plan.steps if st.label == "weights" and "layers on GPU" in st.formula)
    assert f"token embedding (128,256 × 4,096) in CPU RAM: {embd:,} B, all the CPU holds" in weights.formula
    assert f"CPU RAM {embd:,} B" in weights.value


def test_the_prefill_flops_step_shows_params_less_the_embedding():
    steps, _ = _steps()
    matmul = 8_030_261_248 - 128_256 * 4_096 - 65 * 4_096
    assert matmul == 7_504_658_432
    step = steps["prefill FLOPs (matmuls)"]
    assert step.formula.startswith("2 × (8,030,261,248 params − 525,336,576 input embedding (a row a token) − 266,240 ")
    assert step.formula.endswith(f"= 2 × {matmul:,}") and step.value == "15.01 GFLOP/token"
    assert list(steps).index("prefill FLOPs (matmuls)") == list(steps).index("prefill speed") - 1


def test_a_hybrid_models_kv_line_carries_its_recurrent_state():
    """granite-4.0-h-tiny (36 Mamba-2 layers, 4 attention layers) on an RTX 4060 at 131,072 tokens, 4 slots: the
    line read 'KV 8 KiB/token for the whole model' while the KV column also holds the recurrent state, 36 layers ×
    (9,984 conv + 393,216 ssm elements) × 4 B × 4 sequences = 232,243,200 B = 221.5 MiB, the same at any context."""
    plan = check(CheckRequest(model="granite-4.0-h-tiny", gpu="rtx-4060", ram="32G", use_measurements=False))[0]
    state = 36 * (9_984 + 393_216) * 4 * 4
    assert state == 232_243_200
    assert plan.allocation.kv_bytes_per_token == 4 * 2 * 4 * 128 * 2 == 8_192      # 4 layers × K and V rows
    from runlocal.plan import kv_per_token_phrase

    assert kv_per_token_phrase(plan) == ("KV 8 KiB/token for the whole model + recurrent state 221 MiB "
                                         "(the same at any context)")
    assert sum(d.kv_cache for d in plan.allocation.devices) >= state + 8_192 * plan.settings.ctx
