"""How a diagnosis answer counts on the memory / not memory line (review20b's catch, diagnose21): `unknown` says the
text does not tell, so a scorer counts it wrong whichever the truth is — never as a right "not memory"."""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import CATEGORIES, memory_side


@pytest.mark.parametrize("category, side", [
    # written out by hand from kb.CATEGORIES' comments: every category but these two says the model did not fit
    ("not_memory", False),
    ("unknown", None),
    ("cuda_oom_load", True),
    ("cuda_oom_long_context", True),
    ("oom_killer", True),
    ("metal_oom", True),
    ("llamacpp_alloc_fail", True),
])
def test_each_category_says_memory_not_memory_or_neither(category, side):
    assert memory_side(category) is side


def test_only_unknown_says_neither():
    assert [c for c in CATEGORIES if memory_side(c) is None] == ["unknown"]


def test_an_unknown_answer_on_a_lookalike_is_not_a_right_not_memory():
    # vLLM's start-up advice about CUDA graphs: a look-alike (nothing failed) that diagnose answers unknown
    line = ("INFO 08-19 07:51:12 model_runner.py:1028] CUDA graphs can take additional 1~3 GiB memory per GPU. "
            "If you are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.")
    got = diagnose_text(line).category
    assert got == "unknown"
    look_alike = False                       # the truth: memory did not run out
    assert memory_side(got) != look_alike    # not counted as a right "not memory"
    assert memory_side(got) is not True      # nor as a look-alike called memory
