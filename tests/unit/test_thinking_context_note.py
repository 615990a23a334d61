"""review22 #8: without -c, llama-server --fit shortens Qwen3-30B-A3B to 4,096 tokens on an 8 GB card and nothing said
that a thinking model's reasoning alone overflows that. Which models think, and how long their reasoning runs, is read
from data/thinking_models.json; the expectations here are the sources' own statements, written out:
- vLLM's reasoning-outputs docs: "The reasoning feature for the Qwen3 series is enabled by default"; the DeepSeek R1
  series and QwQ-32B use the deepseek_r1 parser; "DeepSeek-V3.1 reasoning is disabled by default".
- SiliconFlow's reasoning docs: maximum reasoning chain length 32,768 for the Qwen3 series and DeepSeek-R1, 16,384 for
  QwQ-32B."""

from __future__ import annotations

from runlocal.check import check
from runlocal.request import CheckRequest
from runlocal.thinking import short_context_note, thinking_family


def test_families_as_the_sources_say():
    assert thinking_family("qwen3-30b-a3b")["reasoning_tokens"] == 32768
    assert thinking_family("deepseek-r1-distill-qwen-7b")["reasoning_tokens"] == 32768
    assert thinking_family("qwq-32b")["reasoning_tokens"] == 16384
    # reasoning off unless asked (vLLM docs), and Qwen's instruct-only / coder releases: no note
    for alias in ("deepseek-v3.1", "qwen3-30b-a3b-2507", "qwen3-coder-30b-a3b", "llama-3.1-8b", "qwen3-8b-base"):
        assert thinking_family(alias) is None, alias


def test_fit_s_4096_on_an_8gb_card_is_flagged_for_a_thinking_model():
    plan, notes = check(CheckRequest(model="qwen3-30b-a3b", gpu="rtx-4060"))
    assert plan.settings.ctx == 4096            # --fit's fallback (review22 q01): 4,096 < 32,768
    said = [n for n in notes if "thinks before it answers" in n]
    assert len(said) == 1 and "32,768" in said[0] and "4,096-token context llama-server --fit chose" in said[0]


def test_no_note_at_or_past_the_reasoning_budget_or_for_other_models():
    assert short_context_note("qwen3-8b", 32768, False, "llama.cpp") is None
    assert short_context_note("qwen3-8b", 32767, True, "vllm") is not None
    _, notes = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4060"))
    assert not any("thinks before it answers" in n for n in notes)
