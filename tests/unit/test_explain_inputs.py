"""--explain carries the inputs a reader needs to recompute each memory figure, and the decode formula names the
layers each device was given (review19 #8, #9). Each test writes the hand formula out over inputs taken from the
model's published config.json (quoted here, not read from the code) or from the command line runlocal prints
(-ngl, --tensor-split, --n-cpu-moe: what llama-server is told), and checks that the explain text carries those
inputs and that the formula over them gives the figure printed."""

from __future__ import annotations

import re
from functools import cache

import pytest

from runlocal.check import CheckRequest, check


@cache
def _plan(model: str, gpu: str, ctx: int, ram: str | None = None, kv: str | None = None):
    plan, _ = check(CheckRequest(model=model, gpu=gpu, ctx=ctx, ram=ram, kv_cache=kv, use_measurements=False))
    return plan


def _step(plan, label: str):
    found = [st for st in plan.steps if st.label == label]
    assert found, f"no '{label}' step in {[st.label for st in plan.steps]}"
    return found[0]


def _placement(plan) -> str:
    """The weights step of the layout (the other "weights" step is the file's bytes by type)."""
    return next(st.formula for st in plan.steps if st.label == "weights" and "layers on GPU" in st.formula)


def _int(text: str) -> int:
    return int(text.replace(",", "").removesuffix(" B"))


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


def test_dense_kv_inputs():
    """Llama-3.1-8B config.json: num_key_value_heads 8, hidden_size 4096 / num_attention_heads 32 = head_dim 128,
    32 layers; f16 = 2 B; q8_0 = 34 B per 32 values (ggml's block_q8_0: a 2-byte scale + 32 int8)."""
    plan = _plan("llama-3.1-8b", "rtx-4090", 32768)
    inputs = _step(plan, "KV per token, one layer")
    assert "32 full layers: K 8 kv_heads × 128 head_dim × 2 B + V 8 × 128 × 2 B" in inputs.formula
    per_layer = 8 * 128 * 2 + 8 * 128 * 2
    assert _int(inputs.value) == per_layer == 4096
    assert _int(_step(plan, "KV cache").value) == 32 * per_layer * 32768 == 4_294_967_296
    q8 = _plan("llama-3.1-8b", "rtx-4090", 32768, kv="q8_0")
    assert "K 8 kv_heads × 128 head_dim × 34 B per 32" in _step(q8, "KV per token, one layer").formula
    assert _int(_step(q8, "KV cache").value) == 32 * 2 * (8 * 128 // 32 * 34) * 32768


def test_sliding_window_cells_formula():
    """gemma-3-12b config.json: 48 layers, every 6th global (8 full, 40 sliding), sliding_window 1024,
    num_key_value_heads 8, head_dim 256. llama.cpp's iSWA cache (src/llama-kv-cache-iswa.cpp): size_swa =
    min(size_base, GGML_PAD(n_swa × n_seq_max + n_ubatch, 256)) for a unified cache; -np auto = 4 seqs, n_ubatch 512."""
    plan = _plan("gemma-3-12b", "rtx-4090", 32768)
    cells = _step(plan, "sliding-window cells")
    assert "n_swa 1,024 × 4 seq + n_ubatch 512" in cells.formula
    swa = min(32768, _pad(1024 * 4 + 512, 256))
    assert _int(cells.value) == swa == 4608
    assert "48 layers (40 sliding, 8 full): K 8 kv_heads × 256 head_dim × 2 B" in \
        _step(plan, "KV per token, one layer").formula
    per_layer = 2 * 8 * 256 * 2
    assert _int(_step(plan, "KV cache").value) == 8 * per_layer * 32768 + 40 * per_layer * swa == 3_657_433_088


def test_mla_latent_without_v():
    """DeepSeek-V2-Lite config.json: 27 layers, kv_lora_rank 512, qk_rope_head_dim 64; from llama.cpp PR #19067 the
    cache holds the latent alone (V a view of K): (512 + 64) × 2 B per layer and token — not 2 × 16 heads × 192."""
    plan = _plan("deepseek-v2-lite", "rtx-4090", 32768)
    inputs = _step(plan, "KV per token, one layer")
    assert "27 MLA layers: K (kv_lora_rank 512 + qk_rope 64) × 2 B" in inputs.formula and "no V" in inputs.formula
    assert _int(inputs.value) == (512 + 64) * 2
    assert _int(_step(plan, "KV cache").value) == 27 * (512 + 64) * 2 * 32768 == 1_019_215_872


def test_recurrent_state_element_counts():
    """granite-4.0-h-tiny config.json: hidden_size 1536, mamba_expand 2 (d_inner 3072), mamba_d_state 128,
    mamba_n_groups 1, mamba_d_conv 4; 36 Mamba-2 layers. llama.cpp keeps per layer r (conv) = (d_conv − 1) ×
    (d_inner + 2 × n_groups × d_state) and s (ssm) = d_state × d_inner elements in f32, one per sequence (4)."""
    plan = _plan("granite-4.0-h-tiny", "rtx-4090", 32768)
    conv, ssm = (4 - 1) * (3072 + 2 * 1 * 128), 128 * 3072
    state = _step(plan, "recurrent state")
    assert f"36 layers × ({conv:,} conv + {ssm:,} ssm elements)" in state.formula and "× 4 seq" in state.formula
    assert _int(state.value) == 36 * (conv + ssm) * 4 * 4 == 232_243_200


def _decode_terms(formula: str):
    """[device words] (W GB + f×K GB KV) ÷ (eff × BW GB/s) + L layer-eq. × µs, per device."""
    rx = re.compile(r"\[([^\]]+)\] \(([\d.]+) GB \+ ([\d.]+)×([\d.]+) GB KV\) ÷ \(([\d.]+) × ([\d.]+) GB/s\) \+ "
                    r"([\d.]+) layer-eq\. × ([\d.]+) µs")
    return [(m[0], *map(float, m[1:])) for m in rx.findall(formula)]


def _check_decode_formula(plan, n_layers: int):
    decode = _step(plan, "decode speed")
    terms = _decode_terms(decode.formula)
    assert len(terms) >= 2, decode.formula
    weights_read = sum(t[1] for t in terms)
    seconds = 0.0
    for _, gb, kv_factor, kv_gb, eff, bw, layer_eq, us in terms:
        assert layer_eq == pytest.approx(n_layers * gb / weights_read, abs=0.11)   # the count's definition
        seconds += (gb + kv_factor * kv_gb) / (eff * bw) + layer_eq * us * 1e-6
    split = re.search(r"\+ (\d+) × ([\d.]+) ms split", decode.formula)
    seconds += int(split[1]) * float(split[2]) / 1e3
    assert 1 / seconds == pytest.approx(float(decode.value.split()[0]), rel=0.01)
    return [t[0] for t in terms]


def test_two_gpus_the_split_is_the_command_line():
    """llama-3.1-70b (80 layers) on 2 × RTX 3090, -c unset: --fit writes --tensor-split a,b, the GPUs' shares of the
    81 slots (80 layers + output, the output on the last GPU: src/llama-model.cpp). The weights step and the decode
    formula name those counts, and the decode figure is the formula over its printed numbers."""
    plan = _plan("llama-3.1-70b", "2x3090", None)
    a, b = map(int, re.search(r"--tensor-split (\d+),(\d+)", plan.command).groups())
    assert "-ngl 81" in plan.command and a + b == 81
    gpus = [f"GPU 0: {a} layers (blocks 0–{a - 1})", f"GPU 1: {b - 1} layers (blocks {a}–79) + output"]
    assert "; ".join(gpus) in _placement(plan)
    assert _check_decode_formula(plan, 80) == gpus


def test_two_gpus_without_a_split_share_by_free_memory():
    """At -c 8192 --fit moves nothing and writes no -ts: llama.cpp splits by the GPUs' free memory, equal here, so
    slot il (of 81) goes to GPU 0 while il / 81 < 1/2: il ≤ 40, 41 layers; GPU 1 the other 39 and the output."""
    plan = _plan("llama-3.1-70b", "2x3090", 8192)
    assert "--tensor-split" not in plan.command
    first = sum(1 for il in range(81) if il / 81 < 1 / 2)
    gpus = [f"GPU 0: {first} layers (blocks 0–{first - 1})", f"GPU 1: {80 - first} layers (blocks {first}–79) + output"]
    assert "; ".join(gpus) in _placement(plan)
    assert _check_decode_formula(plan, 80) == gpus


def test_layers_in_ram_the_split_is_ngl():
    """qwen3-8b (36 layers) on an RTX 4060 at 32k: -ngl N puts the output and the last N − 1 layers on the GPU
    (i_gpu_start = n_layer + 1 − ngl), the first 37 − N on the CPU."""
    plan = _plan("qwen3-8b", "rtx-4060", 32768)
    ngl = int(re.search(r"-ngl (\d+)", plan.command)[1])
    gpu, cpu = f"GPU 0: {ngl - 1} layers (blocks {37 - ngl}–35) + output", f"CPU: {37 - ngl} layers (blocks 0–{36 - ngl})"
    assert f"{gpu}; {cpu}" in _placement(plan)
    assert _check_decode_formula(plan, 36) == [gpu, cpu]


def test_experts_in_ram_said_as_such():
    """gpt-oss-120b (36 layers) on an RTX 4090 with 96 GiB RAM at 32k: --n-cpu-moe N keeps the routed experts of
    blocks 0 … N−1 in RAM while every layer's attention is on the GPU."""
    plan = _plan("gpt-oss-120b", "rtx-4090", 32768, ram="96G")
    n = int(re.search(r"--n-cpu-moe (\d+)", plan.command)[1])
    words = f"CPU: the routed experts of {n} layers (blocks 0–{n - 1})"
    weights = _placement(plan)
    assert weights.startswith("36/36 layers on GPU + output") and words in weights
    assert _check_decode_formula(plan, 36)[1] == words


def test_type_per_tensor_adds_up():
    """Llama-3.1-8B at Q4_K_M: llama-quantize gives output.weight and, in the use_more_bits layers, attn_v and
    ffn_down Q6_K (src/llama-quant.cpp); Q4_K is 144 B per 256 weights, Q6_K 210 B per 256, F32 4 B (ggml's block
    tables). Parameters over the types: 8,030,261,248 (the checkpoint's safetensors total)."""
    plan = _plan("llama-3.1-8b", "rtx-4090", 8192)
    mix = _step(plan, "weights: type per tensor")
    per = {m[0]: (int(m[1].replace(",", "")), int(m[2]), int(m[3]))
           for m in re.findall(r"(\w+) ([\d,]+) params × (\d+) B per (\d+)", mix.formula)}
    assert per["Q4_K"][1:] == (144, 256) and per["Q6_K"][1:] == (210, 256) and per["F32"][1:] == (4, 1)
    assert sum(p for p, _, _ in per.values()) == 8_030_261_248
    assert "attn_v ×16" in mix.formula and "ffn_down ×16" in mix.formula and "output)" in mix.formula
    shown = dict(re.findall(r"(\w+) ([\d,]+) B", mix.value))
    for dtype, (params, size, block) in per.items():
        assert params * size // block == int(shown[dtype].replace(",", ""))
    assert sum(int(v.replace(",", "")) for v in shown.values()) == _int(_step(plan, "weights").value)
