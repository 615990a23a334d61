"""vLLM 0.9.1 caps max_model_len at tokenizer_config.json's model_max_length for every model; 0.9.0 / 0.9.0.1 have no
such step and 0.9.2 keeps it for pooling models only. Read in the sdists (sha256 in measurements/vllm_rocm/releases.txt),
quoted below; the behaviour is also in a 0.9.1 user's log (vllm-project/vllm#20241)."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.request import CheckRequest
from runlocal.runtimes.context_limit import TOKENIZER_MAX_LENGTH, vllm_tokenizer_capped

# 0.9.1 vllm/config.py:1423-1443:
#     def get_and_verify_max_len(self, max_model_len: int):
#         max_model_len = _get_and_verify_max_len(...)
#         tokenizer_config = try_get_tokenizer_config(self.tokenizer, ...)
#         if tokenizer_config is None:
#             return max_model_len
#         model_max_length = tokenizer_config.get("model_max_length", max_model_len)
#         max_model_len = min(max_model_len, model_max_length)
#         return max_model_len
# 0.9.2 :1452-1466: "we only consider tokenizer_config for pooling models" (`if self.runner_type == "pooling":`)
# The log (vllm#20241, InternVL3-14B, asked max_model_len=32768): "Initializing a V1 LLM engine (v0.9.1) with config:
# … max_seq_len=12288" — the asked length replaced by a smaller one with no message; "upgrade vLLM to 0.9.2 solved the
# problem".


@pytest.mark.parametrize("release, expected", [
    ((0, 9, 0), 131072), ((0, 9, 0, 1), 131072), ((0, 9, 1), 16384), ((0, 9, 2), 131072), (None, 131072),
])
def test_deepseek_r1_distill_by_release(release, expected):
    from runlocal.model import catalog

    model = catalog.lookup("deepseek-r1-distill-qwen-7b")
    assert TOKENIZER_MAX_LENGTH["deepseek-r1-distill-qwen-7b"][0] == 16384        # vllm PR #20322's "16384"
    assert vllm_tokenizer_capped(model, 131072, release) == expected
    assert vllm_tokenizer_capped(model, 8192, (0, 9, 1)) == 8192                   # min(): a shorter ask is kept


def test_the_plan_starts_at_the_tokenizer_length_and_says_so():
    request = dict(model="deepseek-r1-distill-qwen-7b", gpu="rtx-4090", use_measurements=False)
    capped = check(CheckRequest(runtime="vllm==0.9.1", **request))[0]
    assert "--max-model-len 16384" in capped.command
    assert capped.allocation.compromise and "vLLM 0.9.1 starts with max_model_len 16,384, not 131,072" in \
        capped.allocation.compromise
    for release in ("vllm==0.9.0", "vllm==0.9.2"):
        plan = check(CheckRequest(runtime=release, **request))[0]
        assert "--max-model-len 131072" in plan.command and not plan.allocation.compromise
    # a model whose tokenizer length is not known here is not capped, and a shorter ask is not touched
    other = check(CheckRequest(model="llama-3.1-8b", gpu="h100", runtime="vllm==0.9.1", use_measurements=False))[0]
    assert "--max-model-len 131072" in other.command
    short = check(CheckRequest(runtime="vllm==0.9.1", ctx=8192, **request))[0]
    assert "--max-model-len 8192" in short.command and not short.allocation.compromise
    # an asked length above it: as in the #20241 log (asked 32768, started at 12288, no error), 0.9.1 starts — at the
    # tokenizer's length — rather than refusing
    asked = check(CheckRequest(runtime="vllm==0.9.1", ctx=32768, **request))[0]
    assert asked.allocation.refusal is None and asked.allocation.settings.ctx == 16384
    assert "not 32,768" in (asked.allocation.compromise or "")


def test_every_max_context_figure_is_the_capped_one():
    """0.9.1 serves no request over model_max_length (16,384, PR #20322) whatever --max-model-len asks, so the plan's
    "max context … per request" is 16,384 on an H100 (its pool, 961,744 tokens at 56 KiB, holds far more), where 0.9.2
    starts at 131,072 (config.json max_position_embeddings) and says so; the fixes' words name the same figure."""
    request = dict(model="deepseek-r1-distill-qwen-7b", gpu="h100", use_measurements=False)
    capped = check(CheckRequest(runtime="vllm==0.9.1", **request))[0]
    assert capped.max_context == 16384 and capped.to_dict()["max_context"] == 16384
    # no fix offers the uncapped length (the first one names it as the "before" of the context it cuts: finding 1)
    assert capped.fixes and all("131,072" not in f.title and "→ 131,072" not in f.effect for f in capped.fixes)
    asked = check(CheckRequest(runtime="vllm==0.9.1", ctx=32768, **request))[0]
    assert asked.max_context == 16384
    assert check(CheckRequest(runtime="vllm==0.9.2", **request))[0].max_context == 131072


def test_fixes_above_the_cap_are_judged_at_the_context_asked():
    """review23 finding 1: --ctx 32768 on 0.9.1 is served at 16,384 (the compromise, verdict tight). The plan at 16,384
    is the same pool (vLLM's pool does not depend on max_model_len) and nothing is given up, so it fits: asking for the
    cap is the fix, offered first, and it says the cap is why. Every other lever, re-planned from the capped settings,
    used to claim "tight → fits" while its command silently asked for 16,384: judged at 32,768, the cap still holds,
    so none of them ends the compromise and none is offered on an H100 (where 32,768 would start but for the cap)."""
    request = dict(model="deepseek-r1-distill-qwen-7b", gpu="h100", runtime="vllm==0.9.1", use_measurements=False)
    asked = check(CheckRequest(ctx=32768, **request))[0]
    at_cap = check(CheckRequest(ctx=16384, **request))[0]
    assert asked.verdict == "tight" and at_cap.verdict == "fits" and not at_cap.allocation.compromise
    first = asked.fixes[0]
    assert first.title == "Reduce context to 16,384" and first.command.endswith("--max-model-len 16384")
    assert "context 32,768 → 16,384 tokens: release 0.9.1 serves no longer whatever is asked" in first.effect
    assert len(asked.fixes) == 1
    # where the asked context does not start at all (a 32B BF16 on one 24 GB card), the levers that make it start are
    # offered at the context asked: their commands ask for it, not for the cap
    small = check(CheckRequest(model="deepseek-r1-distill-qwen-32b", gpu="rtx-4090", runtime="vllm==0.9.1", ctx=32768,
                               use_measurements=False))[0]
    assert small.verdict == "does_not_fit" and small.fixes
    for fix in small.fixes:
        assert "--max-model-len 16384" not in fix.command, fix


def test_the_thinking_note_does_not_send_a_capped_plan_to_the_context_it_asked():
    """DeepSeek-R1's reasoning runs to 32,768 tokens (data/thinking_models.json); 0.9.1 serves 16,384 whatever is
    asked, so "plan --ctx 32768" (what was asked) is no remedy on it: the note names the cap instead."""
    request = dict(model="deepseek-r1-distill-qwen-7b", gpu="h100", runtime="vllm==0.9.1", use_measurements=False)
    _, notes = check(CheckRequest(ctx=32768, **request))
    said = [n for n in notes if "thinks before it answers" in n]
    assert len(said) == 1 and "16,384-token context this release serves at most" in said[0]
    assert "on a release that serves it (this one stops at 16,384)" in said[0]
    _, notes = check(CheckRequest(ctx=32768, **{**request, "runtime": "vllm==0.9.2"}))
    assert not any("thinks before it answers" in n for n in notes)        # 0.9.2 serves the 32,768 asked
