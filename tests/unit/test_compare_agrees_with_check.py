"""review16b finding 7: `compare` and `check` gave opposite verdicts for one card, model and context (llama-3.1-70b
on an RTX 3060 at 8,192: compare "does not fit", largest context 6,656; check "tight", 10,752, "runs, tight, if RAM
≥ 33 GiB"): compare judged the host's assumed 32 GiB of RAM as if stated, check settles it. Each compare row is now
the plan check makes (check.settled_plan); here the two are asked the same questions over a small grid and must give
the same answer, field by field."""

import pytest

from runlocal.check import CheckRequest, check
from runlocal.compare import compare_devices

DEVICES = ["rtx-3060", "rtx-4090", "2x3090"]
GRID = [("llama-3.1-70b", 8192), ("llama-3.1-8b", 32768), ("qwen3-30b-a3b", 8192)]


@pytest.mark.slow
@pytest.mark.parametrize("model, ctx", GRID)
def test_each_compare_row_is_the_plan_check_makes(model, ctx):
    rows = compare_devices(DEVICES, model=model, ctx=ctx)
    assert [r["spec"] for r in rows] == ["rtx-3060-12gb", "rtx-4090", "2x rtx-3090"]
    for name, row in zip(DEVICES, rows):
        plan, _ = check(CheckRequest(model=model, gpu=name, ctx=ctx, quant=row["quant"], use_measurements=False))
        said = (name, model, ctx)
        assert row["verdict"] == plan.verdict, said
        assert row["max_context"] == plan.max_context, said
        # a row that does not start shows no speed, as check's text does (render/text.speed_phrase)
        speed = None if plan.verdict == "does_not_fit" else plan.speed["decode_tokens_per_s"]
        assert row["decode_tokens_per_s"] == speed, said
        assert row["conditions"] == list(plan.conditions), said
        assert row["command"] == plan.command, said


def test_the_reviewed_case_is_tight_with_its_ram_condition():
    """The review's own case: check said tight with 'runs, tight, if RAM ≥ 33 GiB' where compare said does not fit;
    compare now says what check says (the largest context is whatever check's plan gives: 10,752 at the review,
    8,960 on main at this branch's merge — the agreement is what is tested)."""
    row = compare_devices(["rtx-3060"], model="llama-3.1-70b", ctx=8192)[0]
    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="rtx-3060", ctx=8192, use_measurements=False))
    assert (row["verdict"], row["max_context"]) == (plan.verdict, plan.max_context)
    assert row["verdict"] == "tight" and row["max_context"] > 8192      # runs at the 8K asked, as check says
    assert row["conditions"][0].startswith("runs, tight, if RAM ≥ 33 GiB; at 32 GiB it does not fit")


@pytest.mark.parametrize("ram", ["32G", "64G"])
def test_with_the_ram_stated_compare_and_check_agree_without_a_condition(ram):
    """`compare --ram` is check's --ram: the RAM is known, so no row carries an "if RAM ≥" condition; at 32 GiB the
    70B on a 12 GB card does not fit (the condition above says so), at 64 GiB it runs."""
    row = compare_devices(["rtx-3060"], model="llama-3.1-70b", ctx=8192, ram=ram)[0]
    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="rtx-3060", ctx=8192, ram=ram, use_measurements=False))
    assert (row["verdict"], row["max_context"], row["conditions"]) == (plan.verdict, plan.max_context, [])
    assert row["verdict"] == ("does_not_fit" if ram == "32G" else "tight")


def test_a_row_that_does_not_start_shows_no_speed():
    """A 70B AWQ under vLLM on one 24 GiB card: weights alone leave no KV pool, vLLM refuses to start; check prints no
    speed for it (render/text.speed_phrase), and neither does its compare row (nor a per-dollar figure)."""
    row = compare_devices(["rtx-4090"], model="llama-3.1-70b", runtime="vllm", quant="awq")[0]
    assert row["verdict"] == "does_not_fit"
    assert row["decode_tokens_per_s"] is None and row["prefill_tokens_per_s"] is None
    assert "tokens_per_s_per_1000_usd" not in row


@pytest.mark.slow
def test_every_priced_row_with_a_speed_has_its_speed_per_price():
    """review17b #9: gpt-oss-120b on an RTX 4090 ($1,599, 25.1 tok/s, part of the experts in RAM) showed "—" for tok/s
    per $1k. Each row with a price and a decode speed now has decode ÷ price × 1,000 (worked here from the row's own
    two figures), whether or not the model is whole on its GPUs; a row without a price (a VRAM figure) has none."""
    rows = compare_devices(["rtx-4090", "2x3090", "32G"], model="gpt-oss-120b")
    partly_in_ram = [r for r in rows if r["price_usd"] and r["decode_tokens_per_s"] and not r["runs_whole"]]
    assert {r["spec"] for r in partly_in_ram} >= {"rtx-4090"}
    for r in rows:
        if r["price_usd"] and r["decode_tokens_per_s"]:
            assert r["tokens_per_s_per_1000_usd"] == pytest.approx(r["decode_tokens_per_s"] / r["price_usd"] * 1000,
                                                                   abs=1e-3), r["spec"]
        else:
            assert "tokens_per_s_per_1000_usd" not in r, r["spec"]
    four = next(r for r in rows if r["spec"] == "rtx-4090")
    assert four["price_usd"] == 1599 and four["tokens_per_s_per_1000_usd"] == pytest.approx(
        four["decode_tokens_per_s"] / 1.599, abs=1e-3)
