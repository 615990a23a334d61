"""fixes.py leaves its last resort (_combined: a smaller GGUF with a shorter context) unplanned where none of its fixes
could be offered (fixes_unoffered.py): DeepSeek-V3 at -c 8192 on 4 × RTX 3090, whose check planned two of them at
IQ4_XS and Q3_K_M (each a whole --fit over the four GPUs) and dropped both. Checked against the fixes made anyway:
the same answer, and each of those fixes a compromise that does not improve the tight plan. The bound for settings
that put every layer on the GPUs (every_layer_surely_over) is checked by hand and against the plan it spares."""

from __future__ import annotations

import pytest

from runlocal import fixes, fixes_unoffered
from runlocal.check import CheckRequest, check
from runlocal.runtimes import llamacpp

GiB = 1 << 30
ASK = dict(model="deepseek-v3", runtime="llama.cpp", gpu="4xrtx-3090", ctx=8192, use_measurements=False)


def _fresh() -> None:
    for memo in (llamacpp._ALLOCATIONS, llamacpp._FITS, llamacpp._BUFFERS):     # plans made afresh, not recalled
        memo.clear()


@pytest.mark.slow
def test_deepseek_v3_s_combined_fixes_made_anyway_are_never_offered(monkeypatch):
    asked = []
    real = fixes_unoffered.combined_unoffered
    monkeypatch.setattr(fixes, "combined_unoffered", lambda f: asked.append(real(f)) or asked[-1])
    skipped, skipped_fixes = check(CheckRequest(**ASK))
    assert asked == [True]
    made: list = []
    real_combined = fixes._combined

    def combined(f):
        before = len(f.tried)
        real_combined(f)
        made.extend((t, f.improves(t)) for t in f.tried[before:])
    monkeypatch.setattr(fixes, "combined_unoffered", lambda f: False)
    monkeypatch.setattr(fixes, "_combined", combined)
    _fresh()
    planned, planned_fixes = check(CheckRequest(**ASK))
    # the fixes made anyway (session 20: IQ4_XS and Q3_K_M, each with -c 7,936): each holds weights in system memory
    # as --fit placed them, so it is tight at best beside a tight plan, and none is offered
    assert skipped.verdict == "tight" and len(made) == 2, [t.title for t, _ in made]
    assert all(t.alloc.compromise and t.verdict == "tight" and not improves for t, improves in made)
    assert skipped.to_dict() == planned.to_dict() and skipped_fixes == planned_fixes


def test_deepseek_v3_s_smaller_quants_outgrow_four_3090s_by_hand():
    """Why the bound fires: even Q2_K's weights, less the token embedding (129,280 × 7,168 at 2 B at most) that stays
    in RAM, are past 4 × (23.58 GiB less --fit's 1 GiB margin), before any KV cache or CUDA context."""
    from runlocal.model.catalog import lookup
    from runlocal.runtimes.llamacpp_layout import FIT_MARGIN
    from runlocal.weights import estimate

    model = lookup("deepseek-v3")
    for quant in ("IQ4_XS", "Q3_K_M", "Q2_K"):
        assert estimate(model, quant).total - 129_280 * 7_168 * 2 > 4 * (23.58 * GiB - FIT_MARGIN), quant


def test_a_combined_fix_that_is_offered_is_still_planned():
    """Llama-3.1-70B at -c 131,072 on an RTX 4060 (test_fix_quant_and_context): the plan does not fit, so a fix with
    a compromise can improve it, and the pair is planned and offered."""
    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="rtx-4060", ram="32G", ctx=131072, use_measurements=False))
    assert plan.verdict == "does_not_fit"
    assert any("and reduce context to" in f.title for f in plan.fixes)


@pytest.mark.parametrize("alias, ngl, over", [("mixtral-8x7b", 33, True), ("llama-3.1-8b", 33, False)])
def test_every_layer_surely_over_by_hand_and_against_the_plan(alias, ngl, over):
    """-ngl past n_layers on 2 × RTX 3060 (11.75 GiB each): Mixtral 8x7B's Q4_K_M weights (28.4 GB, less its 262 MB
    token embedding) are past the 23.5 GiB of both cards, so every such plan overflows a GPU; Llama-3.1-8B's 4.9 GB
    are not, and the bound says nothing. Each checked against the plan itself at -c 4096."""
    from runlocal.model.catalog import lookup
    from runlocal.runtimes.llamacpp_fit_bound import every_layer_surely_over
    from runlocal.runtimes.llamacpp_layout import CTX_PAD

    plan, _ = check(CheckRequest(model=alias, runtime="llama.cpp", gpu="2xrtx-3060", ctx=4096, n_gpu_layers=ngl,
                                 use_measurements=False))
    targets = list(plan.searched_on)
    gpus = [t for t in targets if t.kind != "cpu"]
    model = lookup(alias)
    assert (plan.weights.total - model.vocab_size * model.hidden_size * 2 > sum(g.capacity for g in gpus)) is over
    at_least = plan.settings.with_(ctx=CTX_PAD)
    assert every_layer_surely_over(plan.planner, plan.model, plan.weights, at_least, targets) is over
    if over:
        assert plan.verdict == "does_not_fit"
        assert any(d.total > d.capacity for d in plan.allocation.devices if d.kind != "cpu")
    # -ngl not past n_layers, or left to --fit: not this bound's
    assert not every_layer_surely_over(plan.planner, plan.model, plan.weights,
                                       at_least.with_(n_gpu_layers=model.n_layers), targets)
    assert not every_layer_surely_over(plan.planner, plan.model, plan.weights,
                                       at_least.with_(n_gpu_layers=None), targets)
