"""review19 #13: the site's model page plans each reference device's check without the fixes and the most-requests
search it never shows (check(with_fixes=False, with_concurrency=False)). The reference is the whole check, fixes and
concurrency included, as `runlocal check MODEL --gpu DEVICE --ctx 8192` makes it: every figure the page shows is
the same."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.hardware.catalog import find_device
from runlocal.web.directory import MODEL_PAGE_CTX, REFERENCE_DEVICES, model_facts

pytestmark = pytest.mark.slow      # two whole checks per device


@pytest.mark.parametrize("alias", ["qwen3-30b-a3b", "gemma-3-12b"])     # a MoE offloaded on the small cards; SWA
def test_the_page_shows_what_the_whole_check_says(alias):
    facts = model_facts(alias, None)
    assert len(facts["runs"]) >= 8
    offloaded = 0
    for run in facts["runs"]:
        plan, _ = check(CheckRequest(model=alias, gpu=run["device"].id, ctx=MODEL_PAGE_CTX, use_measurements=False))
        assert plan.fixes or plan.verdict == "fits"      # the whole check did plan what the page leaves out
        assert (run["verdict"], run["max_context"], run["quant"], run["decode"]) == \
            (plan.verdict, plan.max_context, plan.weights.quant, plan.speed.get("decode_tokens_per_s")), run["device"].id
        assert (run["partly"] is not None) == (plan.allocation.compromise is not None
                                               and plan.settings.llamacpp.n_gpu_layers is not None)
        offloaded += run["partly"] is not None
    assert {r["device"].id for r in facts["runs"]} <= {find_device(d).id for d in REFERENCE_DEVICES}
    if alias == "qwen3-30b-a3b":
        assert offloaded >= 1         # the page's "N of M layers on the GPU" row is among those compared
