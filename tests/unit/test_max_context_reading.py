"""One reading of "max context" per plan, whatever -c was asked (review18 finding 3: Llama-3.1-70B on 2 × RTX 3090
with 64 GiB said 12,288 without -c, 15,616 at -c 8192 and 131,072 at -c 32768). Where llama-server --fit places the
layers, the max context is the largest -c at which it keeps every layer on the GPU (max_context_basis "all_on_gpu");
only where no context does, the largest -c that starts with layers in system memory ("layers_in_ram"). Each figure
is asked again of the planner at its own -c and one cache step (256 cells) more — the edge of what it claims — and
the step between them is the KV cache's, by hand: 80 layers × 2 × 8 KV heads × 128 × 2 B = 320 KiB a token for the
70B (32 layers: 128 KiB for the 8B), × 256 cells."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.compare import compare_devices
from runlocal.render.choose_text import CONTEXT_BASIS_SHORT
from runlocal.render.text import limit_phrases

KIB = 1024


def _plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def _edge_holds(ask: dict, plan, kv_per_token: int) -> None:
    n = plan.max_context
    at, past = _plan(**ask, ctx=n), _plan(**ask, ctx=n + 256)
    assert at.verdict != "does_not_fit" and not at.allocation.compromise           # every layer on the GPU
    assert past.verdict == "does_not_fit" or past.allocation.compromise              # --fit moves one (or none start)
    total = sum(d.kv_cache for d in past.allocation.devices) - sum(d.kv_cache for d in at.allocation.devices)
    assert total == 256 * kv_per_token


def test_an_8b_on_an_8_gb_card_has_one_max_context_at_every_ctx():
    ask = dict(model="llama-3.1-8b", gpu="rtx-4060", ram="32G")
    plans = [_plan(**ask, **({"ctx": c} if c else {})) for c in (None, 8192, 14336, 65536)]
    assert {(p.max_context, p.max_context_basis) for p in plans} == {(plans[0].max_context, "all_on_gpu")}
    _edge_holds(ask, plans[0], 32 * 2 * 8 * 128 * 2)
    assert 32 * 2 * 8 * 128 * 2 == 128 * KIB
    # -c 14336 said "131,072 (the largest -c that starts; --fit moves what it must …)" before
    said = " ".join(limit_phrases(plans[2]))
    assert f"max context {plans[0].max_context:,} per request (every layer on the GPU" in said


@pytest.mark.slow
def test_the_review_s_machine_gives_one_figure_and_compare_labels_it():
    ask = dict(model="llama-3.1-70b", gpu="2x3090", ram="64G")
    plans = [_plan(**ask, **({"ctx": c} if c else {})) for c in (None, 8192, 32768)]
    assert {(p.max_context, p.max_context_basis) for p in plans} == {(plans[0].max_context, "all_on_gpu")}
    _edge_holds(ask, plans[0], 80 * 2 * 8 * 128 * 2)
    one = [_plan(model="llama-3.1-70b", gpu="rtx-4090", ram="64G", **({"ctx": c} if c else {})) for c in (None, 32768)]
    assert {(p.max_context, p.max_context_basis) for p in one} == {(one[0].max_context, "layers_in_ram")}
    assert "with layers in system memory: no context keeps every layer on the GPU" in " ".join(limit_phrases(one[0]))
    rows = compare_devices(["rtx-4090", "2x3090"], model="llama-3.1-70b", ram="64G")
    assert [(r["max_context"], r["max_context_basis"]) for r in rows] == [
        (one[0].max_context, "layers_in_ram"), (plans[0].max_context, "all_on_gpu")]
    assert set(CONTEXT_BASIS_SHORT) == {"all_on_gpu", "layers_in_ram"}


def test_without_fit_placing_the_reading_is_the_largest_that_starts():
    p = _plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="llama.cpp==b6000", ctx=131072)   # before --fit
    assert p.max_context_basis == "starts" and p.to_dict()["max_context_basis"] == "starts"
    p = _plan(model="llama-3.1-8b", gpu="rtx-4090", runtime="vllm", ctx=8192)
    assert p.max_context_basis == "starts"


def test_the_longer_context_fix_names_the_reading_it_offers():
    # --fit cut gpt-oss-120b's context to 4,096 with experts in RAM: no context keeps every layer on the GPU, so the
    # fix's longer context is one with layers in system memory, and says so (not "every layer still on the GPU")
    p = _plan(model="gpt-oss-120b", gpu="rtx-4090", ram="64G")
    assert p.max_context_basis == "layers_in_ram"
    fix = next(f for f in p.fixes if f.title.startswith("Ask for context"))
    assert f"-c {p.max_context}" in fix.command and "--fit moving layers to system memory" in fix.effect
