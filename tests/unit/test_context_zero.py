"""--ctx 0: llama-server's -c 0, "0 = loaded from model" (common/arg.cpp), n_ctx 0 → n_ctx_train
(src/llama-context.cpp) and its default — planned as --ctx left out, on llama.cpp only."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.errors import InputError

KW = dict(model="qwen2.5-0.5b", gpu="rtx-4090", use_measurements=False)


@pytest.mark.parametrize("zero", [0, "0"])
def test_llama_cpp_context_zero_is_the_trained_context(zero):
    unset, unset_notes = check(CheckRequest(runtime="llama.cpp", **KW))
    plan, notes = check(CheckRequest(runtime="llama.cpp", ctx=zero, **KW))
    # Qwen2.5-0.5B's config.json: max_position_embeddings 32768, which -c 0 loads; the plan is the unset one's
    assert plan.settings.ctx == 32768 and plan.to_dict() == unset.to_dict()
    assert [n for n in notes if n not in unset_notes] and any(n.startswith("-c 0: ") for n in notes)


@pytest.mark.parametrize("runtime", ["ollama", "vllm", "sglang", "transformers"])
def test_other_runtimes_refuse_context_zero_naming_the_field(runtime):
    with pytest.raises(InputError, match=rf"^ctx: 0 is llama-server's -c 0 .*; {runtime} is planned at a context"):
        check(CheckRequest(runtime=runtime, ctx=0, **KW))


def test_below_zero_is_still_out_of_bounds():
    with pytest.raises(InputError, match=r"^ctx: must be ≥ 0"):
        check(CheckRequest(runtime="llama.cpp", ctx=-1, **KW))


def test_the_api_takes_context_zero_for_llama_cpp(tmp_path):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}"))
    zero = client.get("/api/v1/check", params={"model": "qwen2.5-0.5b", "runtime": "llama.cpp", "ctx": 0,
                                                "gpu": "rtx-4090"})
    assert zero.status_code == 200, zero.text
    assert zero.json()["settings"]["ctx"] == 32768
    refused = client.get("/api/v1/check", params={"model": "qwen2.5-0.5b", "runtime": "vllm", "ctx": 0,
                                                   "gpu": "rtx-4090"})
    assert refused.status_code >= 400 and "ctx" in refused.text
