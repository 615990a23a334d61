"""A model Ollama runs on one sequence whatever OLLAMA_NUM_PARALLEL says has no "up to N fits" (review23b).

Ollama sets OLLAMA_NUM_PARALLEL to 1 for some models before it starts the runner, so no larger value is ever served:
server/sched.go at v0.4.0 ("multimodal models don't support parallel requests yet": every model with a projector,
v0.2.0 – v0.4.0; llm/server.go NewLlamaServer's `--parallel 1` in v0.1.34 – v0.1.48), from v0.4.1 for mllama
(checkMllamaModelFamily), and at ollama/ollama's newest mirrored commit for a list of families that begins "mllama",
"qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe", "qwen3next", "lfm2" (read with `git show <tag>:server/sched.go` in the
mirror). The requests line used to add the most sequences whose KV fits ("up to OLLAMA_NUM_PARALLEL=512 fits at this
context" for Llama 3.2 Vision on Ollama 0.4.0), a figure no setting reaches.
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.plan import requests_at_once


def _plan(**kw):
    return check(CheckRequest(gpu="rtx-3060", ram="32G", use_measurements=False, **kw))[0]


@pytest.mark.parametrize("model, runtime, parallel", [
    ("llama-3.2-11b-vision", "ollama==0.4.0", 4),    # mllama, projector: one sequence in v0.2.0 – v0.4.0 and after
    ("qwen3.5-9b", "ollama", 1),                     # qwen35: one sequence in the newest release's list
])
def test_a_single_sequence_model_serves_one_request_and_offers_no_more(model, runtime, parallel):
    plan = _plan(model=model, runtime=runtime, parallel=parallel)
    assert plan.verdict != "does_not_fit"
    at_once = requests_at_once(plan)
    assert plan.settings.parallel == 1 and plan.max_concurrency == 1.0
    assert at_once["requests"] == 1 and "up to" not in at_once["text"]


def test_a_model_ollama_runs_in_parallel_still_says_how_many_fit():
    # Llama 3.1 8B Q4_K_M on a 12 GB card at num_ctx 2048: 128 KiB of KV a token (32 layers × 8 KV heads × 128 × 2 × 2 B),
    # 256 MiB a sequence, and the GPU has gigabytes left after the 4.6 GiB of weights: many more than one fit
    plan = _plan(model="llama-3.1-8b", runtime="ollama")
    assert plan.max_concurrency is not None and plan.max_concurrency > 4
    assert "up to OLLAMA_NUM_PARALLEL=" in requests_at_once(plan)["text"]
