"""vLLM --max-num-seqs 1 and SGLang --max-running-requests 1 are values the engines honour (vllm/engine/arg_utils.py
--max-num-seqs; sglang server_args.py --max-running-requests) that a plan cannot yet tell from "not given" (Settings
stores 1 for both: runtimes/base.py Settings.__post_init__). Until it can, the answer says so instead of silently
planning the default: its command has no such flag, and a note names it."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.request import CheckRequest


def ask(runtime: str, parallel: int | None):
    return check(CheckRequest(model="qwen3-8b", gpu="h100", runtime=runtime, ctx=8192, parallel=parallel,
                              use_measurements=False))


@pytest.mark.parametrize("runtime, flag", [("vllm", "--max-num-seqs"), ("sglang", "--max-running-requests")])
def test_one_is_said_to_be_planned_as_not_given(runtime, flag):
    plan, notes = ask(runtime, 1)
    assert flag not in plan.command
    assert [n for n in notes if n.startswith(f"{flag} 1: planned as not given")]
    assert plan.to_dict() == ask(runtime, None)[0].to_dict()      # the default's plan, as the note says
    two, notes_two = ask(runtime, 2)
    assert f"{flag} 2" in two.command and not [n for n in notes_two if "planned as not given" in n]


def test_llama_cpp_keeps_one_apart_from_auto():
    plan, notes = ask("llama.cpp", 1)
    assert "--parallel 1" in plan.command and not [n for n in notes if "planned as not given" in n]
