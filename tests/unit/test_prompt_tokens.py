"""--prompt-tokens: the prompt the prefill speed and the time to first token are for (request.py CheckRequest).

The bounds are the request's own (1 … 2^24, and no longer than the context asked for); the arithmetic is checked against
a hand computation from Llama 3.1 8B's config.json (32 layers, 32 query heads of 128), not against the code's own
figures.
"""

from __future__ import annotations

import json

import pytest
from asking import ask, run_cli

from runlocal.check import CheckRequest, build_settings
from runlocal.errors import InputError
from runlocal.hardware import speed as S
from runlocal.hardware.speed import time_to_first_token
from runlocal.request import validate_request

# meta-llama/Llama-3.1-8B config.json: num_hidden_layers 32, num_attention_heads 32, hidden_size 4096 (head dim 128)
LLAMA31_LAYERS, LLAMA31_HEADS, LLAMA31_HEAD_DIM = 32, 32, 128


def _settings(**kw):
    return build_settings(CheckRequest(model="llama-3.1-8b", **kw))


def test_default_is_llama_bench_pp512():
    assert _settings().prompt_tokens == 512


@pytest.mark.parametrize("value, expected", [(8192, 8192), ("8k", 8192), ("32k", 32768), (1, 1), (1 << 24, 1 << 24)])
def test_accepted_prompts(value, expected):
    assert _settings(prompt_tokens=value).prompt_tokens == expected


@pytest.mark.parametrize("value, words", [
    (0, "prompt-tokens: must be ≥ 1"),
    (-5, "prompt-tokens: must be ≥ 1"),
    ((1 << 24) + 1, "prompt-tokens: must be ≥ 1 and ≤ 16,777,216, got 16,777,217"),
    ("17M", "prompt-tokens: must be ≥ 1 and ≤ 16,777,216"),
    ("0", "prompt-tokens: must be a positive number of tokens"),
    ("lots", "prompt-tokens: 'lots' is not a token count"),
])
def test_refused_prompts_name_the_field(value, words):
    with pytest.raises(InputError) as e:
        validate_request(CheckRequest(model="llama-3.1-8b", prompt_tokens=value))
    assert str(e.value).startswith(words)


def test_prompt_longer_than_the_context_is_refused():
    with pytest.raises(InputError, match=r"^prompt-tokens: the prompt must fit the context \(8,192 tokens\), got 20,000"):
        _settings(ctx=8192, prompt_tokens=20000)
    assert _settings(ctx=8192, prompt_tokens=8192).prompt_tokens == 8192


def test_a_context_below_the_default_prompt_shrinks_the_default_not_the_request():
    # `runlocal check MODEL -c 256` once failed on a flag never given ("prompt-tokens: the prompt must fit the context
    # (256 tokens), got 512"); the default pp512 prompt now fills the context, and a prompt asked for is still checked
    assert _settings(ctx=256).prompt_tokens == 256
    assert _settings(ctx=21).prompt_tokens == 21          # a llama-bench pp17 + tg4 run (outcomes batch 4)
    assert _settings(ctx=4096).prompt_tokens == 512
    assert _settings(ctx=256, prompt_tokens="512").prompt_tokens == 256   # the CLI's default, handed over as text
    with pytest.raises(InputError, match=r"^prompt-tokens: the prompt must fit the context \(256 tokens\), got 300"):
        _settings(ctx=256, prompt_tokens=300)


def test_ttft_is_the_prompt_at_the_prefill_rate():
    assert time_to_first_token(8192, 4096.0) == 2.0       # 8,192 tokens at 4,096 tokens/s: 2 s
    assert time_to_first_token(512, None) is None          # no prefill figure: no TTFT invented


def test_longer_prompt_pays_attention_at_mean_depth_by_hand():
    """From 512 to 8,192 prompt tokens the seconds per prompt token grow by the attention over the extra mean depth
    only: 4 FLOPs × heads × head width × layers × (4,096 − 256) tokens. With flash attention off (-fa off) it is
    the unfused graph's (hardware/fa_off_prefill.py: its products over the cells in use, 4,352 against 512, at the
    f16 rates, and 20 B a score through memory); with it on (llama.cpp's
    default on CUDA) it runs through the MMA FlashAttention kernel (hardware/fa_prefill.py): half the FLOPs (Q·Kᵀ) at
    the RTX 4090's f16 rate with F32 accumulate, 165.2 TFLOPS, half (softmax·V) at its F16-accumulate rate, INT8 / 2 =
    330.3 TFLOPS, both at the card's clock share, over the kernel's fitted share FA_MMA_EFF. Everything else a prompt
    token costs is the same."""
    attention_flops = 4 * LLAMA31_HEADS * LLAMA31_HEAD_DIM * LLAMA31_LAYERS * (8192 / 2 - 512 / 2)
    assert attention_flops == 2_013_265_920                 # 524,288 FLOPs per cached token × 3,840 tokens
    for flash in ("off", "auto"):
        short, _ = ask(f"runlocal check llama-3.1-8b --gpu rtx-4090 --ctx 16384 --flash-attn {flash}")
        long, _ = ask(f"runlocal check llama-3.1-8b --gpu rtx-4090 --ctx 16384 --prompt-tokens 8192 --flash-attn {flash}")
        p512, p8192 = short.speed["prefill_tokens_per_s"], long.speed["prefill_tokens_per_s"]
        prefill_step = next(st for st in long.steps if st.label == "prefill speed").formula
        # "… ÷ (0.226 × 660.6 int8 TOPS × 0.85 (…" : the rate the step states
        rate_words = prefill_step.split("÷ (")[1].split(" (")[0]
        eff, peak, share = (float(w) for w in rate_words.replace("int8 TOPS", "").split("×"))
        if flash == "off":      # the unfused graph (fa_off_prefill.py): cuBLAS at the f16 rates, 20 B a score
            scores = LLAMA31_HEADS * LLAMA31_LAYERS * (4352 - 512)     # cells: 512 × (1 + … + 16) / 16 against 512
            extra_s = attention_flops / 2 / (165.2e12 * share) + attention_flops / 2 / (660.6e12 / 2 * share) \
                + scores * 20 / (S.constants("nvidia-gddr", "cuda", None).decode_eff * 1008e9)
        else:
            extra_s = (attention_flops / 2 / (165.2e12 * share) + attention_flops / 2 / (660.6e12 / 2 * share)) \
                / S.FA_MMA_EFF
        assert 1 / p8192 - 1 / p512 == pytest.approx(extra_s, rel=0.01)    # the figures are rounded to 0.1 tokens/s
    # and the time to the first token is the prompt at that rate
    assert long.speed["time_to_first_token_s"] == pytest.approx(8192 / p8192, abs=0.001)
    assert short.speed["time_to_first_token_s"] == pytest.approx(512 / p512, abs=0.001)


def test_no_prefill_no_ttft():
    """A mixture of experts on Vulkan has no prefill figure (backend_speed.moe_prefill_gap): no TTFT either, and the
    --explain step says it is not predicted."""
    plan, _ = ask("runlocal check qwen3-30b-a3b --gpu rtx-4090 --backend vulkan --prompt-tokens 4096")
    assert plan.speed["prefill_tokens_per_s"] is None and plan.speed["time_to_first_token_s"] is None
    step = next(st for st in plan.steps if st.label == "time to first token")
    assert step.value == "not predicted" and step.formula.startswith("4,096-token prompt")


def test_cli_json_has_the_prompt_and_its_ttft():
    r = run_cli("check", "llama-3.1-8b", "--gpu", "rtx-4090", "--prompt-tokens", "8192", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    speed = doc["speed"]
    assert doc["settings"]["prompt_tokens"] == 8192 and speed["prefill_prompt_tokens"] == 8192
    assert speed["time_to_first_token_s"] == pytest.approx(8192 / speed["prefill_tokens_per_s"], abs=0.001)
    assert any(e["label"] == "time to first token" for e in doc["explain"])


def test_cli_text_states_the_first_token_and_refuses_bad_input():
    r = run_cli("check", "llama-3.1-8b", "--gpu", "rtx-4090", "--prompt-tokens", "8k")
    assert r.returncode == 0 and "(8,192-token prompt)" in r.stdout and "first token after" in r.stdout
    bad = run_cli("check", "llama-3.1-8b", "--gpu", "rtx-4090", "--prompt-tokens", "0")
    assert bad.returncode == 2 and "prompt-tokens: must be a positive number of tokens" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_http_api_and_site_form_take_the_prompt(tmp_path):
    """The HTTP API's check and the site's check form come from the same request contract."""
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}"))
    r = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "gpu": "rtx-4090", "prompt_tokens": "8k"})
    assert r.status_code == 200, r.text
    speed = r.json()["speed"]
    assert speed["prefill_prompt_tokens"] == 8192
    assert speed["time_to_first_token_s"] == pytest.approx(8192 / speed["prefill_tokens_per_s"], abs=0.001)
    bad = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "gpu": "rtx-4090", "prompt_tokens": 0})
    assert bad.status_code == 422 and "prompt_tokens" in bad.text
    page = client.get("/", params={"model": "llama-3.1-8b", "gpu": "rtx-4090", "n": "1", "prompt": "8192"})
    assert page.status_code == 200 and "8,192-token prompt" in page.text


def test_prompt_longer_than_the_context_fit_chose_has_no_prefill():
    """Without --ctx, llama-server --fit may settle on a context shorter than the prompt (gpt-oss-120b on one RTX 4090
    with 64 GiB: 4,096 tokens); that context cannot take the prompt, so no prefill and no first-token time."""
    plan, _ = ask("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G --prompt-tokens 8192")
    assert plan.settings.ctx is not None and plan.settings.ctx < 8192
    assert plan.speed["prefill_tokens_per_s"] is None and plan.speed["time_to_first_token_s"] is None
    assert plan.speed["prefill_not_predicted"] == (f"not predicted: the 8,192-token prompt does not fit the "
                                                   f"{plan.settings.ctx:,}-token context")
