"""SGLang 0.4.9, read in its wheel (measurements/sglang_versions/wheels.txt, sha256 8c2a13c3…) for review23 finding 8:
its server_args.py memory rules are 0.4.8's line for line (mem_fraction_static by GPU tier at :280, chunked prefill
and graph batch at :332 / :345), except the multimodal reduction: 0.4.8's ModelRunner multiplied any
mem_fraction_static, asked or not, by 0.90 (model_runner.py:415); 0.4.9 does it in ServerArgs.__post_init__, inside
`if self.mem_fraction_static is None` (server_args.py:328-329), so an asked fraction is kept as it is.

By hand on an H100 (get_device_memory_capacity 81,920 MiB, TP 1): reserved (9.5 + 1/2) GiB = 10,240 MiB, so the tier
gives round((81,920 − 10,240) / 81,920, 3) = 0.875; a multimodal model then gets 0.875 × 0.90 = 0.7875.
"""

from __future__ import annotations

from runlocal.check import check
from runlocal.request import CheckRequest


def _plan(model, runtime, **extra):
    return check(CheckRequest(model=model, runtime=runtime, gpu="h100", ctx=8192, use_measurements=False, **extra))


def _steps(plan):
    return {st.label: st for st in plan.allocation.steps}


def test_an_unasked_fraction_is_lowered_and_passed_as_it_runs():
    plan, notes = _plan("qwen2.5-vl-7b", "sglang==0.4.9")
    assert "--mem-fraction-static 0.7875" in plan.command          # 0.4.9 takes a passed value as it is
    steps = _steps(plan)
    assert "multimodal reduction" not in steps                       # no ModelRunner factor on top
    assert steps["static budget"].formula.endswith("× 0.7875")
    assert "server_args.py:329" in steps["mem_fraction_static"].formula
    assert not [n for n in notes if " not read: planned with " in n]


def test_an_asked_fraction_is_kept_in_0_4_9_and_lowered_in_0_4_8():
    kept = _steps(_plan("qwen2.5-vl-7b", "sglang==0.4.9", mem_fraction_static=0.8)[0])
    lowered = _steps(_plan("qwen2.5-vl-7b", "sglang==0.4.8", mem_fraction_static=0.8)[0])
    assert kept["static budget"].formula.endswith("× 0.8")
    assert lowered["static budget"].formula.endswith("× 0.72")          # 0.8 × 0.90, model_runner.py:415


def test_a_text_model_keeps_the_tier():
    plan, _ = _plan("qwen2.5-7b", "sglang==0.4.9")
    assert "--mem-fraction-static 0.875" in plan.command
    assert _steps(plan)["mem_fraction_static"].source == "sglang 0.4.9 server_args.py:280"


def test_mllama_chunked_prefill_off_cites_0_4_9():
    step = _steps(_plan("llama-3.2-11b-vision", "sglang==0.4.9")[0])["chunked prefill off"]
    assert step.source == "sglang 0.4.9 model_executor/model_runner.py:455, configs/model_config.py:632"
