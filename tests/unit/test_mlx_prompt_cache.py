"""mlx_lm.server's prompt cache (runtimes/mlx_server.py): the KV of up to 10 earlier requests, checked against the
two posted crashes' own numbers (ml-explore/mlx-lm #1390 and #854) and hand computations from the models' configs."""

from runlocal.check import CheckRequest, check
from runlocal.runtimes.mlx_server import DEFAULT_PROMPT_CACHE_SIZE, growth

GB, GiB = 10**9, 1 << 30


def plan_of(model, gpu, ctx, quant):
    plan, _ = check(CheckRequest(model=model, runtime="mlx", gpu=gpu, ctx=ctx, quant=quant, use_measurements=False))
    return plan


def cache_step(plan):
    return next(s for s in plan.steps if s.label == "server prompt cache")


# Qwen3.5-4B config.json: 32 layers, full_attention_interval 4 → 8 full-attention layers; 4 KV heads × head_dim 256;
# the other 24 are gated delta nets (linear_num_key_heads 16, linear_num_value_heads 32, head dims 128, conv kernel 4)
QWEN35_PER_TOKEN = 8 * 2 * 4 * 256 * 2                              # K and V, bf16: 32,768 B
# per sequence: conv state (kernel − 1) × conv_dim in bf16, delta state Hv × Dv × Dk in float32 (mlx_lm gated_delta.py)
QWEN35_STATE = 24 * ((4 - 1) * (2 * 16 * 128 + 32 * 128) * 2 + 32 * 128 * 128 * 4)


def test_issue_1390_prompt_cache_is_ten_caches_at_the_models_kv_per_token():
    # mlx-lm #1390 (0.31.3, Qwen3.5-4B-MLX-8bit, 48 GB Mac, default mlx_lm.server): a 64,523-token prompt, then
    # "Prompt Cache: 10 sequences, 20.11 GB" rising to 25.69 GB and 26.28 GB before "[METAL] ... Insufficient Memory"
    plan = plan_of("qwen3.5-4b", "m3-max-48gb", 64523, "8bit")
    assert plan.allocation.kv_bytes_per_token == QWEN35_PER_TOKEN
    kept = int(cache_step(plan).value.replace(",", "").removesuffix(" B"))
    cells = -(-64523 // 256) * 256                                # KVCache grows in steps of 256
    assert kept == DEFAULT_PROMPT_CACHE_SIZE * (cells * QWEN35_PER_TOKEN + QWEN35_STATE)     # 21.49 GB
    # the post's first reading at 10 sequences lies under ten 64,523-token caches, its later ones above: 25.69 GB is
    # ten caches of ~78k tokens (prompt + answer, the conversation grown past the prompt logged) at 32 KiB/token
    assert 20.11 * GB < kept < 25.69 * GB
    tokens_each = (25.69 * GB / 10 - QWEN35_STATE) / QWEN35_PER_TOKEN
    assert 64523 < tokens_each < 80_000                              # 77,600 tokens a cache


def test_growth_counts_whole_caches_against_the_room_left():
    # 10 caches of 2 GiB beside a plan that leaves 9 GiB: 4 fit, the 5th passes the working set
    g = growth(2 * GiB, 65536, capacity=36 * GiB, total=27 * GiB, trimmable=True)
    assert (g.full, g.fitting, g.overflows) == (20 * GiB, 4, True)
    assert not growth(2 * GiB, 65536, capacity=36 * GiB, total=15 * GiB, trimmable=True).overflows


def test_issue_1390_setup_keeps_its_cache_under_the_working_set_at_the_logged_prompt():
    # weights 4.78 GiB + one 64,523-token cache + ten kept = 26.9 of 36 GiB: the plan states the figure, verdict fits
    plan = plan_of("qwen3.5-4b", "m3-max-48gb", 64523, "8bit")
    assert plan.verdict == "fits" and not plan.conditions
    assert "10 fit in the" in cache_step(plan).formula


def test_a_long_context_that_the_default_cache_overflows_says_when_with_the_flag():
    plan = plan_of("qwen3.5-4b", "m3-max-48gb", 131072, "8bit")
    dev = plan.allocation.devices[0]
    per_sequence = 131072 * QWEN35_PER_TOKEN + QWEN35_STATE           # 4.02 GiB
    free = 36 * GiB - dev.total                                      # 3/4 of 48 GiB is the GPU's working set
    keep = free // per_sequence                                      # 27.07 GiB // 4.02 GiB = 6
    assert keep == 6
    # the printed command is mlx_lm.generate (no prompt cache): its verdict stays; the condition is the server's
    assert plan.verdict == "fits"
    said = plan.conditions[-1]
    assert f"after {keep + 1} turns" in said and f"--prompt-cache-size {keep}" in said
    assert "cannot be trimmed" in said                # gated delta nets: ArraysCache, each turn its own entry
    assert plan.fixes[0].command == f"mlx_lm.server --model mlx-community/Qwen3.5-4B-MLX-8bit --prompt-cache-size {keep}"


def test_plain_kv_model_counts_conversations():
    # Llama-3.1-8B: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 128 KiB/token; 131,072 tokens = 16 GiB a cache
    plan = plan_of("llama-3.1-8b", "m2-max-96gb", 131072, "4bit")
    assert plan.allocation.kv_bytes_per_token == 32 * 8 * 128 * 2 * 2
    keep = (72 * GiB - plan.allocation.devices[0].total) // (16 * GiB)      # 51.6 GiB // 16 GiB = 3
    said = plan.conditions[-1]
    assert plan.verdict == "fits" and f"after {keep + 1} conversations" in said and "160.0 GiB" in said


def test_issue_854_turns_stay_under_the_stated_bound():
    # mlx-lm #854 (0.30.6, Qwen3-Coder-Next-4bit, 96 GB): ~3,900 tokens more per request, out of memory after ~12.
    # Qwen3-Coder-Next config: 48 layers, 12 full-attention (interval 4) × 2 KV heads × head_dim 256, bf16
    per_token = 12 * 2 * 2 * 256 * 2                                   # 24,576 B
    plan = plan_of("qwen3-coder-next", "m2-max-96gb", 46800, "4bit")
    assert plan.allocation.kv_bytes_per_token == per_token
    kept = int(cache_step(plan).value.replace(",", "").removesuffix(" B"))
    # its linear-attention cache cannot be trimmed, so each turn stays an entry: the 10 newest of 12 turns
    turns = sum(3900 * k for k in range(3, 13)) * per_token          # 292,500 tokens: 7.19 GB
    assert turns < kept                                                # the plan's bound (10 × 46,800 tokens) holds it
    # weights + the whole bound stay under the 72 GiB working set: the prompt cache alone does not explain #854
    assert plan.allocation.devices[0].total + kept < 72 * GiB and plan.verdict == "fits"


def test_a_context_whose_ten_caches_fit_stays_fits_without_a_condition():
    # Llama-3.1-8B 4-bit at 8,192 tokens: ten 1 GiB caches beside 4.4 GiB of the plan, of 72 GiB
    plan = plan_of("llama-3.1-8b", "m2-max-96gb", 8192, "4bit")
    assert plan.verdict == "fits" and not plan.conditions


def test_a_plan_that_prints_the_server_is_tight_where_its_cache_overflows():
    # -np 2: the plan prints mlx_lm.server, which keeps the prompt cache (the generate plan above keeps none)
    from runlocal.check import CheckRequest, check

    plan, _ = check(CheckRequest(model="qwen3.5-4b", runtime="mlx", gpu="m3-max-48gb", quant="8bit", ctx=131072,
                                 parallel=2))
    assert plan.command.startswith("mlx_lm.server") and plan.verdict == "tight"
    assert "passes the working set" in plan.conditions[-1]
