"""The memory chart tells the verdict's story (review17b finding 2): the site's chart and /api/v1/curve draw one
curve (plan.context_curves), the plan at each context as its largest context was searched — where llama-server
--fit moved layers to RAM, --fit placing them again at each -c — so every device stays under its limit up to the
largest context the page states and one goes over at the next point charted.

Independent of the curve code: verdict.fits is judged on each point's own plan, and the largest context is the
answer `runlocal check` gives (plan.max_context, from the context search); the expected offload is read off
llama.cpp's rule, not the curve."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check, curve
from runlocal.units import GiB

# two offloading cases whose largest context ends before the trained one (a crossing is drawn): a dense model whose
# layers --fit splits between a 24 GiB card and 48 GiB of RAM, and a MoE whose experts --fit sends to 56 GiB of RAM
OFFLOADING = [dict(model="llama-3.1-70b", gpu="rtx-4090", ctx=32768, ram="48G"),
              dict(model="glm-4.5-air", gpu="rtx-4090", ctx=32768, ram="56G")]


@pytest.mark.parametrize("kw", OFFLOADING, ids=lambda kw: kw["model"])
def test_lines_cross_where_the_largest_context_ends(kw):
    plan, _ = check(CheckRequest(**kw, use_measurements=False))
    trained = plan.model.max_position_embeddings
    assert plan.max_context is not None and plan.max_context < trained        # a crossing to draw
    # --fit moved layers off the GPU at the context asked: the host holds part of the weights (tens of GiB)
    host = next(d for d in plan.allocation.devices if d.kind == "cpu")
    assert host.weights > 10 * GiB
    answer = curve(CheckRequest(**kw))
    assert answer["max_context"] == plan.max_context
    contexts = [p["ctx"] for p in answer["devices"][0]["points"]]
    assert plan.max_context in contexts and plan.settings.ctx in contexts
    for i, ctx in enumerate(contexts):
        under = all(d["points"][i]["total"] <= d["points"][i]["capacity"] for d in answer["devices"])
        assert under == (ctx <= plan.max_context), (ctx, plan.max_context)
    # the page's own chart: the same lines (one function), each device's limit the one the API states
    from runlocal.model.policy import ReadPolicy
    from runlocal.web.site import _planned

    _, _, series = _planned(CheckRequest(**kw), ReadPolicy.server())
    api = {d["device"]: [(p["ctx"], p["total"]) for p in d["points"]] for d in answer["devices"]}
    for s in series:
        assert list(s.points) == api[s.label]


def test_glm_air_on_strix_halo_stays_under_its_share_to_the_largest_context():
    """The review's case: 'Largest context 131,072' while the old chart's GPU line crossed 64 GiB near 40K."""
    kw = dict(model="glm-4.5-air", gpu="ryzen-ai-max-395-128gb", ctx=32768)
    answer = curve(CheckRequest(**kw))
    assert answer["max_context"] == 131072
    gpu = answer["devices"][0]
    assert gpu["kind"] == "unified" and gpu["capacity"] == 64 * GiB     # devices.json: 0.5 × 128 GiB on Linux
    assert all(p["total"] <= gpu["limit"] for p in gpu["points"])


def test_where_fit_moved_nothing_the_gpu_line_crosses_its_limit_less_the_fit_margin():
    """llama-3.1-8b on an RTX 4060 (8 GB) at 8,192: --fit keeps every layer on the GPU, and the largest context is the
    one at which it still moves nothing — the GPU keeping --fit's 1 GiB margin free (llama.cpp common/fit.cpp's
    default). The chart's dashed limit is the capacity less that GiB, and the GPU line crosses it past the answer."""
    kw = dict(model="llama-3.1-8b", gpu="rtx-4060", ctx=8192)
    answer = curve(CheckRequest(**kw))
    gpu = answer["devices"][0]
    assert gpu["capacity"] - gpu["limit"] == 1 * GiB
    largest = answer["max_context"]
    assert largest is not None and largest < 131072
    for p in gpu["points"]:
        assert (p["total"] <= gpu["limit"]) == (p["ctx"] <= largest), (p["ctx"], largest)
