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


def test_where_fit_moved_nothing_the_gpu_line_keeps_the_fit_margin_up_to_the_largest_context():
    """llama-3.1-8b on an RTX 4060 (8 GB) at 8,192: --fit keeps every layer on the GPU, and the largest context is the
    one at which it still moves nothing — the GPU keeping --fit's 1 GiB margin free (llama.cpp common/fit.cpp's
    default). The chart's dashed limit is the capacity less that GiB; up to the largest context every layer is held on
    the GPU under it, and past it --fit moves layers to RAM, as `check --ctx N` plans it (review19 #2): the GPU stays
    under its capacity and the RAM line grows."""
    kw = dict(model="llama-3.1-8b", gpu="rtx-4060", ctx=8192)
    answer = curve(CheckRequest(**kw))
    gpu, ram = answer["devices"][0], answer["devices"][-1]
    assert gpu["capacity"] - gpu["limit"] == 1 * GiB and ram["kind"] == "cpu"
    largest = answer["max_context"]
    assert largest is not None and largest < 131072
    for p in gpu["points"]:
        assert p["total"] <= (gpu["limit"] if p["ctx"] <= largest else gpu["capacity"]), (p["ctx"], largest)
    past = [p["total"] for p in ram["points"] if p["ctx"] > largest]
    assert past == sorted(past) and past[-1] > ram["points"][0]["total"] + 1 * GiB


def test_the_chart_at_the_context_asked_is_the_table():
    """review19 #2: llama-3.1-70b on 2 × RTX 3090 with 64 GiB RAM at 32,768. `check` says --fit keeps 71 of 81 layers
    on the GPUs (-ngl 71: 10 in system memory) and the largest context with every layer on the GPUs is shorter; the
    chart drew every layer pinned there at 32,768 (GPU 0 at 26.2 GiB of a 23.6 GiB card) under a caption saying the
    opposite. Now the point at the context asked is the table's, device by device, and the caption says what it
    draws. The independent answer: `check` for the same request, and again at 65,536 for the next point."""
    kw = dict(model="llama-3.1-70b", gpu="2x3090", ram="64G", ctx=32768)
    plan, _ = check(CheckRequest(**kw, use_measurements=False))
    assert plan.model.n_layers + 1 - plan.settings.llamacpp.n_gpu_layers == 10     # 81 slots (80 + output), 71 on GPU
    assert plan.max_context is not None and plan.max_context < 32768
    answer = curve(CheckRequest(**kw), contexts=[plan.max_context, 32768, 65536])
    assert "--fit places" in answer["drawn"] and "every layer on the GPU" in answer["drawn"]
    at = {d["device"] + str(i): [p["total"] for p in d["points"]] for i, d in enumerate(answer["devices"])}
    table = [d.total for d in plan.allocation.devices]
    assert [v[1] for v in at.values()] == table
    longer, _ = check(CheckRequest(**{**kw, "ctx": 65536}, use_measurements=False))
    assert [v[2] for v in at.values()] == [d.total for d in longer.allocation.devices]
    for d in answer["devices"]:
        assert all(p["total"] <= p["capacity"] for p in d["points"]), d["device"]
