"""SGLang planner: mem_fraction_static defaults, the KV pool from the static budget, refusals, command."""

import pytest

from runlocal.model.spec import AttentionSpec, LayerSpec, ModelSpec
from runlocal.quant.formats import WeightEstimate
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.sglang import (
    CUBLAS_WORKSPACE,
    CUDA_CONTEXT,
    SGLang,
    default_mem_fraction_static,
    gpu_memory_defaults,
    prefill_graph_sizes,
)

MiB, GiB = 1 << 20, 1 << 30


def spec(layers, *, hidden=4096, heads=32, ctx=131072, ff=14336, vocab=128256):
    return ModelSpec(id="m", architecture="LlamaForCausalLM", family="llama", hidden_size=hidden,
                     n_layers=len(layers), n_heads=heads, vocab_size=vocab, layers=tuple(layers),
                     intermediate_size=ff, max_position_embeddings=ctx, repo_id="org/model")


LLAMA8B = spec([LayerSpec(AttentionSpec("full", 8, 128, 128))] * 32)
W16 = WeightEstimate("bf16", 16 * GiB)
CELL = 32 * 8 * (128 + 128) * 2        # layers × KV heads × (head_dim + v_head_dim) × bf16 = 131072 B


def gpu(gib, name="GPU"):
    return Target(name, "gpu", int(gib * GiB), None, int(gib * GiB))


@pytest.mark.parametrize("gpu_mib, tp, expected_chunk, expected_bs", [
    (16376, 1, 2048, 8),       # < 20 GiB (T4, 4080)
    (24564, 1, 4096, 48),      # 4090
    (24564, 4, 4096, 160),     # TP ≥ 4 raises the decode graph batch
    (40960, 1, 4096, 32),      # A100 40GB
    (81559, 1, 8192, 256),     # H100
    (143771, 4, 8192, 512),    # H200 with TP 4
    (183359, 1, 16384, 512),   # B200
])
def test_gpu_memory_defaults(gpu_mib, tp, expected_chunk, expected_bs):
    assert gpu_memory_defaults(gpu_mib, tp) == (expected_chunk, expected_bs)


def test_prefill_graph_bucket_counts():
    # 8 + 14 + 8 + 8 buckets up to 1024, then every 256 to 4096 (12), then every 512
    assert [len(prefill_graph_sizes(n)) for n in (2048, 4096, 8192, 16384)] == [42, 50, 58, 74]


@pytest.mark.parametrize("gpu_mib, chunk, bs, tp, mla, expected", [
    # reserved = 512 + 1.5 × chunk + TP/8 × 1024 + 2 × bs + 8 × buckets; (gpu − reserved) / gpu, 3 decimals
    (81559, 8192, 256, 1, False, 0.830),     # H100: 512 + 12288 + 128 + 512 + 464 = 13904 → 0.8295
    (24564, 4096, 48, 1, False, 0.704),      # 4090: 512 + 6144 + 128 + 96 + 400 = 7280 → 0.7036
    (16376, 2048, 8, 1, False, 0.752),       # 16 GB: 512 + 3072 + 128 + 16 + 336 = 4064 → 0.7518
    (40960, 4096, 32, 1, False, 0.823),      # A100 40GB: 512 + 6144 + 128 + 64 + 400 = 7248 → 0.8230
    (81559, 8192, 512, 4, False, 0.819),     # H100 TP 4: 512 + 12288 + 512 + 1024 + 464 = 14800 → 0.8185
    (81559, 8192, 256, 1, True, 0.816),      # MLA: prefill graphs reserve 1.5 GiB: 512 + 12288 + 128 + 512 + 1536
    (143771, 8192, 256, 1, False, 0.903),    # H200: 13904 → 0.9033
    (61441, 2048, 8, 1, False, 0.833),       # > 60 GiB: the 10 GiB floor wins over 512 + 3072 + 128 + 16 + 336
    (61440, 2048, 8, 1, False, 0.934),       # exactly 60 GiB: no floor (the test is strictly greater), 4064 reserved
])
def test_default_mem_fraction_static(gpu_mib, chunk, bs, tp, mla, expected):
    assert default_mem_fraction_static(gpu_mib, chunk, bs, tp, 1, mla) == expected


def test_defaults_from_target_and_max_running_requests():
    # an 80 GiB GPU (81920 MiB); --max-running-requests 16 caps the decode graphs at 16:
    # 512 + 12288 + 128 + 32 + 464 = 13424 → (81920 − 13424) / 81920 = 0.8361
    s = SGLang().defaults(LLAMA8B, Settings(runtime="sglang", parallel=16), [gpu(80)])
    assert (s.sglang.mem_fraction_static, s.sglang.chunked_prefill_size, s.ctx) == (0.836, 8192, 131072)


def test_pool_tokens_from_budget():
    # tokens = ((free − CUDA context) × mem_fraction_static − weights) // bytes per token
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang").with_(mem_fraction_static=0.9), [gpu(80)])
    pre = 80 * GiB - 620 * MiB
    assert CUDA_CONTEXT == 620 * MiB      # measured on an H100: the context before SGLang measures free memory
    assert a.kv_cache_tokens == (int(pre * 0.9) - 16 * GiB) // 131072
    assert a.kv_bytes_per_token == CELL == 131072
    assert a.devices[0].kv_cache == a.kv_cache_tokens * 131072
    assert a.max_concurrency == a.kv_cache_tokens / 131072
    assert a.refusal is None


def test_fp8_cache_halves_the_cell():
    # --kv-cache-dtype fp8_e5m2: one byte per element
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang", cache_type_k="fp8_e5m2",
                                                 cache_type_v="fp8_e5m2").with_(mem_fraction_static=0.9), [gpu(80)])
    assert a.kv_bytes_per_token == 65536
    assert a.kv_cache_tokens == (int((80 * GiB - 620 * MiB) * 0.9) - 16 * GiB) // 65536


def test_tensor_parallel_splits_heads_and_weights():
    # TP 2: 8 KV heads → 4 per GPU, weights halved; default fraction with TP 2 on 81920 MiB:
    # 512 + 12288 + 256 + 512 + 464 = 14032 → 0.829
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang", tp=2), [gpu(80, "A"), gpu(80, "B")])
    assert a.settings.sglang.mem_fraction_static == 0.829
    assert a.kv_bytes_per_token == 32 * 4 * 256 * 2
    assert [d.weights for d in a.devices] == [8 * GiB, 8 * GiB]
    # SGLang measures the free memory after distributed init, which took 2.01 GB per rank at TP 8 (PR #11716's log)
    assert a.kv_cache_tokens == (int((80 * GiB - 620 * MiB - int(2.01 * GiB)) * 0.829) - 8 * GiB) // 65536


def test_kv_heads_below_tp_are_replicated():
    # get_num_kv_heads: max(1, 2 heads // TP 4) = 1 head per GPU
    m = spec([LayerSpec(AttentionSpec("full", 2, 128, 128))] * 4)
    a = SGLang().allocate(m, WeightEstimate("bf16", GiB), Settings(runtime="sglang", tp=4), [gpu(80)] * 4)
    assert a.kv_bytes_per_token == 4 * 1 * 256 * 2


def test_mla_pool_is_the_latent_and_not_split_by_tp():
    # DeepSeek-V3: 61 layers × (kv_lora_rank 512 + rope 64) × 2 bytes, the same on every TP rank
    m = spec([LayerSpec(AttentionSpec("mla", 1, 576, 512))] * 61, hidden=7168, heads=128, ctx=163840)
    a = SGLang().allocate(m, WeightEstimate("fp8", 640 * GiB), Settings(runtime="sglang", tp=8), [gpu(141)] * 8)
    assert a.kv_bytes_per_token == 61 * 576 * 2


def test_hybrid_swa_pool_ratio():
    # 5 sliding : 1 full; SWA layers get 0.8 × the full layers' tokens: cell = 4096 + 0.8 × 5 × 4096
    m = spec([LayerSpec(AttentionSpec("sliding", 4, 256, 256, 1024))] * 5 + [LayerSpec(AttentionSpec("full", 4, 256, 256))],
             hidden=2560, heads=8, ff=10240)
    a = SGLang().allocate(m, WeightEstimate("bf16", 8 * GiB), Settings(runtime="sglang").with_(mem_fraction_static=0.8),
                          [gpu(24)])
    rest = int((24 * GiB - 620 * MiB) * 0.8) - 8 * GiB
    tokens = int(rest // 20480.0)
    assert a.kv_cache_tokens == tokens
    assert a.devices[0].kv_cache == tokens * 4096 + int(tokens * 0.8) * 5 * 4096


def test_refusal_when_weights_fill_the_static_budget():
    # pre = 16 GiB, budget 0.5 × 16 = 8 GiB < 10 GiB of weights: SGLang's ValueError with 1 − 6/16 = 0.625
    a = SGLang().allocate(LLAMA8B, WeightEstimate("bf16", 10 * GiB),
                          Settings(runtime="sglang").with_(mem_fraction_static=0.5), [gpu(16 + 620 / 1024)])
    assert a.refusal == ("Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5. "
                         "Raise --mem-fraction-static above 0.625")
    assert a.kv_cache_tokens == 0


def test_refusal_when_weights_exceed_the_gpu():
    # 16 GiB of weights on a 12 GiB card: loading itself runs out of memory
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang"), [gpu(12)])
    assert "exceed the free memory" in a.refusal


def test_small_pool_is_a_warning_not_a_refusal():
    # tp_worker.py only warns when the pool is below --context-length
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang"), [gpu(24)])
    assert a.refusal is None and a.kv_cache_tokens < 131072
    assert any("fewer than --context-length 131,072" in x for x in a.assumptions)


@pytest.mark.parametrize("cache_type", ["q8_0", "q4_0"])
def test_llamacpp_cache_types_are_refused(cache_type):
    # SGLang's --kv-cache-dtype has no q8_0 / q4_0
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang", cache_type_k=cache_type, cache_type_v=cache_type),
                          [gpu(80)])
    assert "--kv-cache-dtype" in a.refusal


def test_no_gpu_is_refused():
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang"), [Target("CPU RAM", "cpu", 64 * GiB)])
    assert "CUDA or ROCm GPU" in a.refusal


def test_req_to_token_pool_in_overhead():
    # (max_running_requests + 1) × (context + 4) × 4 bytes, next to the CUDA context
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang", ctx=8192, parallel=64).with_(mem_fraction_static=0.9),
                          [gpu(80)])
    assert a.devices[0].overhead == 620 * MiB + CUBLAS_WORKSPACE + 65 * 8196 * 4


@pytest.mark.parametrize("settings, expected", [
    (Settings(runtime="sglang", ctx=32768).with_(mem_fraction_static=0.85),
     "python -m sglang.launch_server --model-path org/model --context-length 32768 --mem-fraction-static 0.85"),
    (Settings(runtime="sglang", ctx=8192, cache_type_k="fp8_e4m3", cache_type_v="fp8_e4m3",
              tp=2, parallel=32).with_(mem_fraction_static=0.8),
     "python -m sglang.launch_server --model-path org/model --context-length 8192 --mem-fraction-static 0.8 "
     "--kv-cache-dtype fp8_e4m3 --tp-size 2 --max-running-requests 32"),
    (Settings(runtime="sglang", ctx=4096, cache_type_k="fp8", cache_type_v="fp8").with_(mem_fraction_static=0.9),
     "python -m sglang.launch_server --model-path org/model --context-length 4096 --mem-fraction-static 0.9 "
     "--kv-cache-dtype fp8_e4m3"),          # runlocal's "fp8" → SGLang's fp8_e4m3
])
def test_command(settings, expected):
    assert SGLang().command(LLAMA8B, settings) == expected


def test_defaulted_settings_round_trip_into_command():
    # the command carries the defaults SGLang would pick on this GPU
    a = SGLang().allocate(LLAMA8B, W16, Settings(runtime="sglang"), [gpu(24)])
    assert a.settings.sglang.mem_fraction_static == 0.704
    # no context asked and a pool short of config.json's 131,072: SGLang serves up to min(131072 − 1, pool − 1)
    # (managers/tp_worker.py max_req_len), which the command asks for (policy17)
    assert a.kv_cache_tokens is not None and a.kv_cache_tokens < 131072 and a.compromise
    served = min(131072 - 1, a.kv_cache_tokens - 1)
    assert SGLang().command(LLAMA8B, a.settings).endswith(f"--context-length {served} --mem-fraction-static 0.704")
