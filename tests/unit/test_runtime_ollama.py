"""Ollama planner: its own choices (num_ctx tiers, parallel, batch, cache type, --fit) over llama.cpp's bytes."""

from dataclasses import replace

import pytest

from runlocal.model.spec import AttentionSpec, LayerSpec, ModelSpec, TensorInfo
from runlocal.quant.formats import estimate_weights
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.llamacpp import LlamaCpp
from runlocal.runtimes.ollama import FIT_MARGIN, Ollama, automatic_batch, default_num_ctx, predicted_vram

MiB, GiB = 1 << 20, 1 << 30


def llama(*, hidden=4096, layers=32, heads=32, kv=8, head_dim=128, ff=14336, vocab=128256, ctx=131072,
          family="llama", experts=0):
    """A Llama-3.1-8B-shaped spec with tensors (MoE: `experts` routed experts per layer instead of the FFN)."""
    t = [TensorInfo("embed", (vocab, hidden), "embed")]
    for i in range(layers):
        t += [TensorInfo(f"q{i}", (heads * head_dim, hidden), "attn_q", i),
              TensorInfo(f"k{i}", (kv * head_dim, hidden), "attn_k", i),
              TensorInfo(f"v{i}", (kv * head_dim, hidden), "attn_v", i),
              TensorInfo(f"o{i}", (hidden, heads * head_dim), "attn_o", i),
              TensorInfo(f"an{i}", (hidden,), "norm", i), TensorInfo(f"fn{i}", (hidden,), "norm", i)]
        if experts:
            t += [TensorInfo(f"eg{i}", (experts, ff, hidden), "expert_gate", i),
                  TensorInfo(f"eu{i}", (experts, ff, hidden), "expert_up", i),
                  TensorInfo(f"ed{i}", (experts, hidden, ff), "expert_down", i),
                  TensorInfo(f"r{i}", (experts, hidden), "router", i)]
        else:
            t += [TensorInfo(f"g{i}", (ff, hidden), "ffn_gate", i), TensorInfo(f"u{i}", (ff, hidden), "ffn_up", i),
                  TensorInfo(f"d{i}", (hidden, ff), "ffn_down", i)]
    t += [TensorInfo("norm", (hidden,), "norm"), TensorInfo("lm_head", (vocab, hidden), "lm_head")]
    return ModelSpec(id="llama3.1:8b", architecture="LlamaForCausalLM", family=family, hidden_size=hidden,
                     n_layers=layers, n_heads=heads, vocab_size=vocab,
                     layers=tuple([LayerSpec(AttentionSpec("full", kv, head_dim, head_dim), moe=bool(experts))] * layers),
                     tensors=tuple(t), intermediate_size=ff, max_position_embeddings=ctx,
                     n_experts=experts, n_experts_active=2 if experts else 0)


M = llama()
W = estimate_weights(M, "bf16")
KV_PER_TOKEN = 32 * 8 * 128 * 2 * 2        # layers × kv heads × head dim × (K, V) × f16 = 128 KiB


def gpu(gib, total=None):
    return Target(f"GPU {gib}", "gpu", int(gib * GiB), None, int((total or gib) * GiB))


RAM = Target("CPU RAM", "cpu", 64 * GiB)


@pytest.mark.parametrize("vram_gib, overhead, expected", [
    (8, 0, 4096),          # < 23 GiB: the 4k tier
    (22.99, 0, 4096),      # just under the 23 GiB threshold (routes.go uses 23, not 24)
    (23, 0, 32768),        # 23 GiB and up: 32k
    (24, 2 * GiB, 4096),   # OLLAMA_GPU_OVERHEAD is subtracted before the tier is chosen
    (47, 0, 262144),       # 47 GiB and up: 256k
    (80, 0, 262144),       # an H100 80GB
])
def test_default_num_ctx_by_vram(vram_gib, overhead, expected):
    s = Ollama(gpu_overhead=overhead).defaults(llama(ctx=1 << 20), Settings(runtime="ollama"), [gpu(vram_gib), RAM])
    assert s.ctx == expected


def test_two_gpus_add_up_for_the_tier():
    # totalVRAM is the sum over GPUs: two 12 GiB cards → 24 GiB → 32k
    s = Ollama().defaults(llama(ctx=1 << 20), Settings(runtime="ollama"), [gpu(12), gpu(12), RAM])
    assert s.ctx == 32768


def test_cpu_only_gets_4k():
    # no GPU: totalVRAM 0 → the lowest tier
    assert Ollama().defaults(M, Settings(runtime="ollama"), [RAM]).ctx == 4096


def test_tier_function_thresholds():
    # the boundary values straight from server/routes.go
    assert default_num_ctx(47 * GiB - 1) == 32768 and default_num_ctx(23 * GiB - 1) == 4096


@pytest.mark.parametrize("asked, train, expected", [
    (None, 8192, 8192),       # a 48 GiB GPU's 256k default is capped at the training context
    (16384, 8192, 8192),      # so is an explicit num_ctx
    (4096, 8192, 4096),       # below the training context nothing changes
])
def test_num_ctx_capped_at_training_context(asked, train, expected):
    s = Ollama().defaults(llama(ctx=train), Settings(runtime="ollama", ctx=asked), [gpu(48), RAM])
    assert s.ctx == expected


def test_context_length_env_beats_tier():
    # OLLAMA_CONTEXT_LENGTH replaces the VRAM tier
    assert Ollama(context_length=8192).defaults(M, Settings(runtime="ollama"), [gpu(80), RAM]).ctx == 8192


@pytest.mark.parametrize("family, expected", [
    ("llama", 4),           # ordinary architectures keep OLLAMA_NUM_PARALLEL
    ("qwen3next", 1),       # sched.go forces these to 1
    ("qwen3_vl", 1),        # the HF spelling of qwen3vl
    ("nemotron_h", 1),
])
def test_parallel_forced_to_one_for_some_architectures(family, expected):
    s = Ollama().defaults(llama(family=family), Settings(runtime="ollama", parallel=4), [gpu(24), RAM])
    assert s.parallel == expected


def test_predicted_vram_is_file_plus_f16_kv():
    # PredictServerVRAM: 2 (K,V) × 32 layers × 8 KV heads × (4096/32) head dim × 4096 ctx × 2 bytes
    assert predicted_vram(M, 1000, 4096) == 1000 + 2 * 32 * 8 * 128 * 4096 * 2


@pytest.mark.parametrize("ctx, predicted, available, fa_off, small, expected", [
    (4096, 10 * GiB, 24 * GiB, False, False, 512),     # ≤ 4096 tokens: 512
    (8192, 10 * GiB, 24 * GiB, False, False, 1024),    # 10 ≤ 75 % of 24 and 768 MiB ≤ 19.2 − 10 GiB
    (65536, 10 * GiB, 24 * GiB, False, False, 2048),   # 10 ≤ 60 % of 24 = 14.4 and 2 GiB ≤ 9.2 GiB
    (65536, 16 * GiB, 24 * GiB, False, False, 1024),   # 16 > 14.4: 2048 fails, 1024 passes (16 ≤ 18, 0.75 ≤ 3.2)
    (65536, 19 * GiB, 24 * GiB, False, False, 512),    # 19 > 18 (75 %): down to 512
    (65536, 10 * GiB, 0, False, False, 2048),          # no GPU memory known: generationBatchFits says yes
    (8192, 1 * GiB, 8 * GiB, True, True, 256),         # flash attention off on an 8 GiB CUDA GPU above 4k: 256
    (8192, 1 * GiB, 24 * GiB, True, False, 512),       # flash attention off on a bigger CUDA GPU: 512
    (4096, 1 * GiB, 8 * GiB, True, True, 512),         # … and at 4k or less the small GPU gets 512 too
])
def test_automatic_batch(ctx, predicted, available, fa_off, small, expected):
    assert automatic_batch(ctx, predicted, available, flash_off_on_cuda=fa_off, small_cuda_gpu=small) == expected


def test_kv_is_num_ctx_times_parallel():
    # -c num_ctx × num_parallel: 2 × 4096 cells of 128 KiB, all on an 80 GiB GPU
    a = Ollama().allocate(M, W, Settings(runtime="ollama", ctx=4096, parallel=2), [gpu(80), RAM])
    assert sum(d.kv_cache for d in a.devices) == KV_PER_TOKEN * 8192
    assert a.devices[0].kv_cache == KV_PER_TOKEN * 8192


def test_q8_cache_type_sets_k_and_v():
    # OLLAMA_KV_CACHE_TYPE=q8_0: 34 bytes per 32 elements for K and V alike
    a = Ollama().allocate(M, W, Settings(runtime="ollama", ctx=4096, cache_type_k="q8_0", cache_type_v="q8_0"),
                          [gpu(80), RAM])
    assert a.kv_bytes_per_token == 32 * 2 * (8 * 128 // 32 * 34)
    assert a.refusal is None


def test_full_offload_when_it_fits_with_margin():
    # 16 GB of bf16 weights + 4k context on 80 GiB: every layer and the output on the GPU
    a = Ollama().allocate(M, W, Settings(runtime="ollama", ctx=4096), [gpu(80), RAM])
    gpu_dev, cpu_dev = a.devices
    assert gpu_dev.total + FIT_MARGIN <= 80 * GiB
    assert cpu_dev.weights == 128256 * 4096 * 2      # only the token embedding stays on the CPU


@pytest.mark.parametrize("vram_gib", [8, 12, 16])
def test_fit_takes_the_largest_layer_count_that_leaves_the_margin(vram_gib):
    # --fit: the chosen -ngl leaves ≥ 1024 MiB free, one more layer would not (checked against LlamaCpp directly)
    o = Ollama()
    a = o.allocate(M, W, Settings(runtime="ollama", ctx=4096), [gpu(vram_gib), RAM])
    batch = 512
    def gpu_total(ngl):
        s = Settings(runtime="llama.cpp", ctx=4096).with_(batch=batch, ubatch=batch, n_gpu_layers=ngl)
        return LlamaCpp().allocate(M, W, s, [gpu(vram_gib), RAM]).devices[0].total
    assert a.devices[0].total + FIT_MARGIN <= vram_gib * GiB
    ngl = next(n for n in range(M.n_layers + 2) if gpu_total(n) == a.devices[0].total)
    assert gpu_total(ngl + 1) + FIT_MARGIN > vram_gib * GiB


def test_fit_moves_moe_experts_before_layers():
    # MoE: all layers stay on the GPU, the experts of the first k layers go to system memory
    moe = llama(layers=8, experts=8, ff=2048, ctx=32768)
    w = estimate_weights(moe, "bf16")
    a = Ollama().allocate(moe, w, Settings(runtime="ollama", ctx=4096), [gpu(5), RAM])
    expert_layer = 3 * 8 * 2048 * 4096 * 2                 # gate, up, down experts of one layer, bf16
    assert a.devices[0].kv_cache == 8 * 8 * 128 * 2 * 2 * 4096    # every layer's KV still on the GPU
    k = round(a.devices[1].weights - 128256 * 4096 * 2) // expert_layer
    assert 0 < k < 8
    assert a.devices[0].total + FIT_MARGIN <= 5 * GiB
    assert "experts of" in " ".join(a.assumptions)


def test_user_num_gpu_is_passed_through():
    # PARAMETER num_gpu 10: llama-server gets -ngl 10 (and -b/-ub 512 at 4k), --fit leaves it alone
    a = Ollama().allocate(M, W, Settings(runtime="ollama", ctx=4096).with_(n_gpu_layers=10), [gpu(80), RAM])
    direct = LlamaCpp().allocate(M, W, Settings(runtime="llama.cpp", ctx=4096, parallel=1).with_(
        batch=512, ubatch=512, n_gpu_layers=10), [gpu(80), RAM])
    assert a.devices == direct.devices
    assert a.devices[0].total + FIT_MARGIN < 80 * GiB / 2     # far below what --fit would have chosen
    # and the assumptions say so: the layers are num_gpu's, not --fit's (before: "GPU layers by llama-server --fit
    # (margin 1024 MiB)"), as llama.cpp common/fit.cpp leaves -ngl alone when the user set it
    said = " ".join(a.assumptions)
    assert "num_gpu 10, passed as -ngl" in said and "--fit (margin" not in said, said
    # num_gpu -1 is Ollama's automatic value (api/types.go): --fit places the layers then
    auto = Ollama().allocate(M, W, Settings(runtime="ollama", ctx=4096).with_(n_gpu_layers=-1), [gpu(80), RAM])
    assert "GPU layers by llama-server --fit (1024 MiB margin)" in " ".join(auto.assumptions)


@pytest.mark.parametrize("settings, needle", [
    (dict(cache_type_k="q8_0", cache_type_v="f16"), "one OLLAMA_KV_CACHE_TYPE"),       # K and V differ
    (dict(cache_type_k="fp8", cache_type_v="fp8"), "llama-server accepts"),            # not a llama.cpp type
    (dict(cache_type_k="q4_0", cache_type_v="q4_0", flash_attn="off"), "needs flash attention"),
])
def test_refusals_on_cache_type(settings, needle):
    a = Ollama().allocate(M, W, Settings(runtime="ollama", ctx=4096).with_(**settings), [gpu(80), RAM])
    assert needle in (a.refusal or "")


def test_refusal_when_the_cpu_share_exceeds_ram():
    # 16 GB of weights on a 4 GiB GPU and 4 GiB of RAM: Ollama's system-memory message, in HumanBytes2 units
    a = Ollama().allocate(M, W, Settings(runtime="ollama", ctx=4096), [gpu(4), Target("CPU RAM", "cpu", 4 * GiB)])
    assert a.refusal.startswith("model requires more system memory (")
    assert a.refusal.endswith("than is available (4.0 GiB)")


def test_settings_keep_auto_layers_and_batch():
    # n_gpu_layers and batch stay unset so a re-plan refits them (fixes re-plan with changed settings)
    a = Ollama().allocate(M, W, Settings(runtime="ollama"), [gpu(12), RAM])
    assert a.settings.llamacpp.n_gpu_layers is None and a.settings.llamacpp.batch is None and a.settings.ctx == 4096


CATALOG_M = replace(M, source="catalog:llama-3.1-8b")   # its library tags: data/ollama_tags.json
LIB = "llama3.1:8b-instruct-q4_K_M"
DERIVED = "llama3.1-8b-instruct-q4_k_m-runlocal"


@pytest.mark.parametrize("settings, kwargs, expected", [
    # per-model options go into a Modelfile built FROM the library tag, so the line runs as pasted
    (Settings(runtime="ollama", ctx=16384, cache_type_k="q8_0", cache_type_v="q8_0"), {},
     "OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve & "
     f"printf 'FROM {LIB}\\nPARAMETER num_ctx 16384\\n' > Modelfile && ollama create {DERIVED} -f Modelfile && "
     f"ollama run {DERIVED}"),
    (Settings(runtime="ollama", ctx=4096, parallel=2).with_(n_gpu_layers=20), {"gpu_overhead": 512 * MiB},
     "OLLAMA_NUM_PARALLEL=2 OLLAMA_GPU_OVERHEAD=536870912 ollama serve & "
     f"printf 'FROM {LIB}\\nPARAMETER num_ctx 4096\\nPARAMETER num_gpu 20\\n' > Modelfile && "
     f"ollama create {DERIVED} -f Modelfile && ollama run {DERIVED}"),
    (Settings(runtime="ollama", ctx=8192).with_(flash_attn="off"), {},
     f"OLLAMA_FLASH_ATTENTION=0 ollama serve & printf 'FROM {LIB}\\nPARAMETER num_ctx 8192\\n' > Modelfile && "
     f"ollama create {DERIVED} -f Modelfile && ollama run {DERIVED}"),
])
def test_command(settings, kwargs, expected):
    line, _, said = Ollama(**kwargs).command(CATALOG_M, settings).partition("  # ")
    assert line == expected
    # review19 finding 7: a service already on 11434 makes this `ollama serve` exit; the comment gives Ollama's
    # documented way per platform (docs/faq.mdx "How do I configure Ollama server?": systemctl edit ollama.service with
    # Environment="…" under [Service], then daemon-reload and restart; launchctl setenv on macOS, then restart the app)
    env = expected.split(" ollama serve")[0].split()
    assert "sudo systemctl edit ollama.service, under [Service] " + " ".join(f'Environment="{e}"' for e in env) in said
    assert "; ".join("launchctl setenv " + e.replace("=", " ", 1) for e in env) in said


def test_steps_cite_sources():
    a = Ollama().allocate(M, W, Settings(runtime="ollama"), [gpu(12), RAM])
    labels = [s.label for s in a.steps]
    assert labels[:3] == ["num_ctx", "num_batch (automatic)", "layers (llama-server --fit)"]
    assert all(s.source for s in a.steps[:3])


def test_ollama_environment_is_read_like_ollama_serve(monkeypatch):
    """OLLAMA_* variables of the shell set what Ollama would use; a runlocal flag still wins."""
    from runlocal.check import CheckRequest, check

    monkeypatch.setenv("OLLAMA_NUM_PARALLEL", "4")
    monkeypatch.setenv("OLLAMA_KV_CACHE_TYPE", "q8_0")
    monkeypatch.setenv("OLLAMA_CONTEXT_LENGTH", "8192")
    monkeypatch.setenv("OLLAMA_GPU_OVERHEAD", str(2 << 30))
    plan = check(CheckRequest(model="llama-3.1-8b", runtime="ollama", gpu="rtx-4090", use_measurements=False))[0]
    s = plan.settings
    assert (s.ctx, s.parallel, s.cache_type_k, s.cache_type_v) == (8192, 4, "q8_0", "q8_0")
    assert "OLLAMA_NUM_PARALLEL=4" in plan.command and "OLLAMA_GPU_OVERHEAD=2147483648" in plan.command
    assert "FROM llama3.1:8b-instruct-q4_K_M\\n" in plan.command   # the library's own tag, not llama-3.1-8b:q4_K_M
    flagged = check(CheckRequest(model="llama-3.1-8b", runtime="ollama", gpu="rtx-4090", parallel=2, kv_cache="f16",
                                 use_measurements=False))[0].settings
    assert (flagged.parallel, flagged.cache_type_k) == (2, "f16")
    # other runtimes ignore Ollama's environment
    # (llama-server's own default, -np auto = -1, not Ollama's 4)
    assert check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", use_measurements=False))[0].settings.parallel == -1
