"""MLX planner: mlx-lm's KV caches (256-token steps, rotating, quantized), MLX 4-bit weights, the working set."""

import pytest

from runlocal.hardware.unified_memory import apple_default_working_set as recommended_working_set
from runlocal.model.spec import AttentionSpec, LayerSpec, ModelSpec, TensorInfo
from runlocal.quant.formats import WeightEstimate
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.mlx import MLX, kv_bits_of, mlx_weight_bytes, quantized_row_bytes

MiB, GiB = 1 << 20, 1 << 30


def spec(layers, *, hidden=4096, heads=32, ff=14336, vocab=128256, tensors=()):
    return ModelSpec(id="m", architecture="LlamaForCausalLM", family="llama", hidden_size=hidden,
                     n_layers=len(layers), n_heads=heads, vocab_size=vocab, layers=tuple(layers), tensors=tuple(tensors),
                     intermediate_size=ff, max_position_embeddings=131072, repo_id="mlx-community/Llama-3.1-8B-Instruct-4bit")


LLAMA = spec([LayerSpec(AttentionSpec("full", 8, 128, 128))] * 32)
PER_TOKEN = 32 * 8 * (128 + 128) * 2           # 131072 B in fp16
W = WeightEstimate("mlx-4bit", 4 * GiB, from_file=True)
MAC = Target("M3 Max", "unified", 48 * GiB, 400, 64 * GiB)


def kv(model=LLAMA, mlx=None, **settings):
    a = (mlx or MLX()).allocate(model, W, Settings(runtime="mlx").with_(**settings), [MAC])
    return a, a.devices[0].kv_cache


@pytest.mark.parametrize("ram_gib, logged_mib", [
    (16, 10922.67),     # 2/3 of 16 GB, as ggml_metal_init logs it (llama-cpp-python#687)
    (32, 21845.33),     # 2/3 of 32 GB (ollama#434 logs 21845.34)
    (36, 27648.00),     # 3/4 of 36 GB: an M4 Max 36 GB on macOS 15.7.7 logs 28991.03 MB = 27648 MiB
    (64, 49152.00),     # 3/4 of 64 GB (llama.cpp#1870)
    (128, 98304.00),    # 3/4 from 36 GB (the pre-macOS-26 floor; macOS 26 logs 107.52 GiB, ds4#893)
])
def test_recommended_working_set(ram_gib, logged_mib):
    assert recommended_working_set(ram_gib * GiB) / MiB == pytest.approx(logged_mib, abs=0.01)


@pytest.mark.parametrize("dim, bits, expected", [
    (128, 4, 64 + 8),     # 128 × 4/8 packed bytes + (128/64 groups) × (scale + bias) × 2 B
    (128, 8, 128 + 8),    # 8 bits: 8.5 bits per element
    (64, 4, 32 + 4),      # one group
])
def test_quantized_row_bytes(dim, bits, expected):
    assert quantized_row_bytes(dim, bits) == expected


def test_mlx_4bit_is_4_5_bits_per_weight():
    # affine 4-bit, group 64, fp16 scale + bias per group: 4 + 32/64 = 4.5 bits
    m = spec([], tensors=[TensorInfo("q", (4096, 4096), "attn_q", 0)])
    assert mlx_weight_bytes(m) * 8 / (4096 * 4096) == 4.5


def test_mlx_quantizes_embeddings_but_not_norms_or_odd_widths():
    # nn.quantize takes Linear and Embedding layers whose input width divides by 64; the rest stays 16-bit
    m = spec([], tensors=[TensorInfo("e", (1000, 64), "embed"), TensorInfo("n", (64,), "norm"),
                          TensorInfo("x", (64, 100), "attn_q", 0)])
    assert mlx_weight_bytes(m) == (1000 * 64 // 2 + 1000 * 4) + 64 * 2 + 64 * 100 * 2


@pytest.mark.parametrize("ctx, cells", [
    (1000, 1024),     # KVCache grows in steps of 256 tokens
    (1024, 1024),
    (1025, 1280),
])
def test_kv_cache_steps_of_256(ctx, cells):
    assert kv(ctx=ctx)[1] == PER_TOKEN * cells


def test_parallel_sequences_each_get_a_cache():
    # mlx_lm.server batches sequences: one cache per sequence
    assert kv(ctx=1024, parallel=3)[1] == PER_TOKEN * 1024 * 3


def test_kv_bits_8_above_quantized_kv_start():
    # --kv-bits 8 at 32768 tokens (≥ --quantized-kv-start 5000): per layer per token 8 heads × 136 B × (K, V)
    a, b = kv(ctx=32768, cache_type_k="q8_0", cache_type_v="q8_0")
    assert b == 32 * 8 * 136 * 2 * 32768
    assert a.refusal is None


def test_quantization_peak_when_converting():
    # 4-bit at 6144 tokens: the conversion happens after the chunk that crosses 5000 (6144 tokens); the fp16 cache
    # (4096 B/token/layer) and its 4-bit copy (1152) coexist then, more than the final 1152 × 6144
    b = kv(ctx=6144, cache_type_k="q4_0", cache_type_v="q4_0")[1]
    assert b == 32 * (4096 + 1152) * 6144


def test_kv_bits_below_start_stay_fp16():
    # 4096 tokens never reach --quantized-kv-start 5000
    a, b = kv(ctx=4096, cache_type_k="q8_0", cache_type_v="q8_0")
    assert b == PER_TOKEN * 4096
    assert any("quantized only from 5,000" in x for x in a.assumptions)


def test_quantized_kv_start_zero_quantizes_from_the_first_token():
    # generate_step's default quantized_kv_start is 0 (the CLI's is 5000)
    b = kv(mlx=MLX(quantized_kv_start=0), ctx=4096, cache_type_k="q4_0", cache_type_v="q4_0")[1]
    assert b == 32 * 8 * 72 * 2 * 4096


@pytest.mark.parametrize("ctx, cells", [
    (8192, 2048 + 2048 - 1),     # a rotating cache holds up to max_size + S − 1 after a 2048-token chunk
    (1000, 1024),                # below max_size it grows in 256-token steps
])
def test_max_kv_size_rotates(ctx, cells):
    assert kv(mlx=MLX(max_kv_size=2048), ctx=ctx)[1] == PER_TOKEN * cells


def test_sliding_window_layers():
    # gemma-style 5 sliding (window 1024) : 1 full; 4 heads × (256 + 256) × 2 B per layer per token
    m = spec([LayerSpec(AttentionSpec("sliding", 4, 256, 256, 1024))] * 5 + [LayerSpec(AttentionSpec("full", 4, 256, 256))],
             hidden=2560, heads=8, ff=10240)
    assert kv(m, ctx=8192)[1] == 5 * 4096 * (1024 + 2048 - 1) + 4096 * 8192


def test_mla_caches_latent_and_rope():
    # mlx-lm's DeepSeek-V3 caches kv_latent (512) as keys and k_pe (64) as values, one head, fp16
    m = spec([LayerSpec(AttentionSpec("mla", 1, 576, 512))] * 4, hidden=7168, heads=128)
    a, b = kv(m, ctx=256)
    assert a.kv_bytes_per_token == 4 * 576 * 2 and b == 4 * 576 * 2 * 256


def test_prefill_compute_fused():
    # one 2048-token chunk × (2·4096 + 3·14336) × 2 B + last-token logits 128256 × (2 + 4) B
    a, _ = kv(ctx=4096)
    assert a.devices[0].compute == 2048 * (8192 + 43008) * 2 + 128256 * 6


def test_quantized_attention_materializes_scores():
    # quantized_scaled_dot_product_attention: scores and softmax, 32 heads × 2048 × 32768 × 2 B each
    a, _ = kv(ctx=32768, cache_type_k="q8_0", cache_type_v="q8_0")
    assert a.devices[0].compute == 2048 * (8192 + 43008) * 2 + 32 * 2048 * 32768 * 4 + 128256 * 6


def test_device_is_the_working_set():
    # one unified device, its capacity the GPU working set; weights as stored
    a, b = kv(ctx=1024)
    (d,) = a.devices
    assert (d.capacity, d.weights, d.kv_cache, d.overhead) == (48 * GiB, 4 * GiB, b, 0)


def test_wired_limit_warning():
    # generate.py wired_limit warns above 90 % of max_recommended_working_set_size
    small = Target("M2", "unified", 4 * GiB + 100 * MiB, 100, 8 * GiB)
    a = MLX().allocate(LLAMA, W, Settings(runtime="mlx", ctx=1024), [small])
    assert any(x.startswith("[WARNING] Generating with a model that requires 4096 MB") for x in a.assumptions)


@pytest.mark.parametrize("mlx, settings, targets, needle", [
    (MLX(), {}, [Target("RTX 4090", "gpu", 24 * GiB)], "Apple silicon"),                         # no Metal
    (MLX(max_kv_size=4096), {"cache_type_k": "q4_0", "cache_type_v": "q4_0", "ctx": 8192}, [MAC], "NYI"),
    (MLX(), {"cache_type_k": "q8_0", "cache_type_v": "f16"}, [MAC], "K and V"),                  # one --kv-bits
    (MLX(), {"cache_type_k": "fp8", "cache_type_v": "fp8"}, [MAC], "--kv-bits"),                # not an MLX width
])
def test_refusals(mlx, settings, targets, needle):
    a = mlx.allocate(LLAMA, W, Settings(runtime="mlx").with_(**settings), targets)
    assert needle in (a.refusal or "")


def test_kv_bits_with_sliding_model_refused():
    # models with sliding layers build RotatingKVCache themselves: --kv-bits cannot quantize them
    m = spec([LayerSpec(AttentionSpec("sliding", 4, 256, 256, 1024)), LayerSpec(AttentionSpec("full", 4, 256, 256))])
    a = MLX().allocate(m, W, Settings(runtime="mlx", ctx=8192, cache_type_k="q4_0", cache_type_v="q4_0"), [MAC])
    assert "NYI" in a.refusal


@pytest.mark.parametrize("name, bits", [("f16", None), ("bf16", None), ("q8_0", 8), ("q4_0", 4), ("int4", 4), ("q6", 6)])
def test_kv_bits_of(name, bits):
    assert kv_bits_of(name) == bits


@pytest.mark.parametrize("mlx, settings, expected", [
    # the cache grows with the conversation, as planned: no --max-kv-size unless asked for
    (MLX(), Settings(runtime="mlx", ctx=16384), "mlx_lm.generate --model mlx-community/Llama-3.1-8B-Instruct-4bit"),
    # asked for, it comes with what it does: a rotating cache that forgets the oldest tokens
    (MLX(max_kv_size=4096), Settings(runtime="mlx", ctx=16384),
     "mlx_lm.generate --model mlx-community/Llama-3.1-8B-Instruct-4bit --max-kv-size 4096  # --max-kv-size 4096: "
     "a rotating cache — past 4,096 tokens it forgets the oldest (keeps the first 4), so answers lose the start of a "
     "long conversation"),
    (MLX(), Settings(runtime="mlx", ctx=16384, cache_type_k="q8_0", cache_type_v="q8_0"),
     "mlx_lm.generate --model mlx-community/Llama-3.1-8B-Instruct-4bit --kv-bits 8 --kv-group-size 64"),
    (MLX(quantized_kv_start=0), Settings(runtime="mlx", ctx=4096, cache_type_k="q4_0", cache_type_v="q4_0"),
     "mlx_lm.generate --model mlx-community/Llama-3.1-8B-Instruct-4bit --kv-bits 4 --kv-group-size 64 "
     "--quantized-kv-start 0"),
    (MLX(), Settings(runtime="mlx", ctx=4096, parallel=4), "mlx_lm.server --model mlx-community/Llama-3.1-8B-Instruct-4bit"),
])
def test_command(mlx, settings, expected):
    line = mlx.command(LLAMA, settings)
    assert line == expected or (line.startswith(expected + "  # no context flag: ") and "--max-kv-size" not in expected)
    if "# " not in expected and "mlx_lm.generate" in expected:
        # review19 section 13: mlx_lm.generate has no context length (mlx_lm/generate.py: only --max-kv-size, a
        # rotating cache), so the context planned is said beside the line rather than dropped silently
        assert f"planned here at {settings.ctx:,} tokens" in line


def test_rotating_cache_below_quantized_kv_start_is_fine():
    # to_quantized is only called once the cache reaches --quantized-kv-start (5000): 4096 tokens never get there
    a = MLX(max_kv_size=4096).allocate(LLAMA, W, Settings(runtime="mlx", ctx=4096, cache_type_k="q4_0",
                                                          cache_type_v="q4_0"), [MAC])
    assert a.refusal is None and a.devices[0].kv_cache == PER_TOKEN * 4096


def test_working_set_boundary_at_36_gib():
    # 2/3 below 36 GB (32 GB: 21845.34 MiB, ollama#434), 3/4 from 36 GB: 27 GiB of 36 (an M4 Max 36 GB on
    # macOS 15.7.7, ltsaprounis/ai-chess-coach docs/spike-reports/local-llm-provider.md: "27,648 MiB available")
    assert recommended_working_set(32 * GiB) == 32 * GiB * 2 // 3
    assert recommended_working_set(36 * GiB) == 27 * GiB and recommended_working_set(48 * GiB) == 36 * GiB
