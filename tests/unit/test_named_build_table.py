"""review17 finding 8: named builds (-r ollama==0.12.0, llama.cpp==b6500 …) simulated every compute buffer, 1.2–2.9 s a
check where the current builds' answers come from the shipped table (runtimes/compute_table.py). compute_table_build
now asks each rule set a named build can have once (pinned_rule_sets); the table is keyed by the simulation's
arguments, so any build with that rule set is answered. benchmarks/named_builds.py times them, table on and off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from runlocal.compute_table_build import pinned_rule_sets, questions, rule_signature
from runlocal.runtimes import get_runtime

# the named builds review17 timed (its finding 8 table), and a build of each era the review's findings 1-2 used
REVIEW_BUILDS = ("ollama==0.12.0", "ollama==0.12.5", "llama.cpp==b6500", "llama.cpp==b5000", "llama.cpp==b6000")


@pytest.mark.parametrize("runtime", REVIEW_BUILDS)
def test_each_reviewed_named_build_has_its_rule_set_asked(runtime):
    asked = {rule_signature(get_runtime(r)) for r in pinned_rule_sets()}
    assert rule_signature(get_runtime(runtime)) in asked


def test_the_current_builds_rule_sets_are_not_asked_again():
    current = {rule_signature(get_runtime(r)) for r in ("llama.cpp", "ollama")}
    assert not current & {rule_signature(get_runtime(r)) for r in pinned_rule_sets()}


def test_a_models_questions_ask_the_pinned_rule_sets_at_the_default_context():
    asked = [f for kind, f in questions("gpt-oss-20b") if f.get("runtime", "").count("==")]
    assert {f["runtime"] for f in asked} == set(pinned_rule_sets())
    assert all("ctx" not in f for f in asked)


def _answer(runtime: str, table: str) -> dict:
    cmd = [sys.executable, "-m", "runlocal", "check", "gpt-oss-20b", "--gpu", "rtx-3060", "-r", runtime, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "RUNLOCAL_COMPUTE_TABLE": table}).stdout
    return json.loads(out)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ("ollama==0.12.5", "llama.cpp==b6500", "llama.cpp==b5000"))
def test_a_named_builds_plan_is_the_same_with_the_table_and_without(runtime):
    # the table can make a plan faster, never different (its key: the code's digest, the spec's, the arguments)
    assert _answer(runtime, "1") == _answer(runtime, "0")
