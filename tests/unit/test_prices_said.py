"""Prices a ranking can stand behind (review21 #5, #6, #12): a unified-memory box is priced as the whole computer
where a dated page gives its price, and an unpriced device is listed, not dropped, under a budget; `--used` says how
many rows carry a used price; the DGX Spark's electricity is counted; cost says its electricity is an upper bound.

Independent sources, written out:
- DGX Spark: ChargerLab's teardown (chargerlab.com/teardown-of-nvidia-dgx-spark-4tb): "The GB10 SoC has a thermal
  design power of 140 W, leaving 100 W for other system components" of the 240 W adapter; ferra.ru (2025-08-28)
  reports the same 140 W from NVIDIA's Hot Chips talk.
- Framework Desktop, Ryzen AI Max+ 395 with 128 GB: "$1,999 for the 128GB configuration before storage"
  (matthewjayhunter.com's review); the pre-order reports of Framework's 2025-02-25 event give $1,099 to $1,999.
- Electricity by hand: 140 W × 8 h × 365 d = 408.8 kWh a year; × $0.18/kWh = $73.58."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from runlocal.choose import best, cost, device_price
from runlocal.hardware.catalog import find_device
from runlocal.model.catalog import lookup


@pytest.fixture(scope="module")
def qwen30():
    return lookup("qwen3-30b-a3b")


def test_dgx_spark_electricity_is_counted_at_the_gb10_tdp(qwen30):
    doc = cost(qwen30, find_device("dgx-spark"), ctx=8192, hours_per_day=8, kwh_price=0.18)
    assert doc["own"]["kwh_per_year"] == pytest.approx(140 * 8 * 365 / 1000)          # 408.8
    assert doc["own"]["electricity_per_year_usd"] == pytest.approx(73.58, abs=0.01)
    assert not any("no TDP" in n for n in doc["notes"])


def test_strix_halo_128gb_is_priced_as_the_framework_desktop(qwen30):
    price = device_price(find_device("ryzen-ai-max-395-128gb"))
    assert (price.usd, price.kind, price.as_of) == (1999, "launch", "2025-02-25")
    assert "Framework Desktop" in price.note and "whole computer" in price.note
    assert price.source.startswith("https://")
    # the 64 GB configuration: no dated source, so unpriced, and it says why
    small = device_price(find_device("ryzen-ai-max-395-64gb"))
    assert small.usd is None and "no dated source" in small.note
    # ranked under a $2,500 budget now (before: "devices without a catalog price left out", no Strix Halo row)
    res = best(qwen30, ctx=8192, budget_usd=2500)
    assert "ryzen-ai-max-395-128gb" in {r["device"] for r in res.ranked}


def test_unpriced_devices_are_listed_under_a_budget_and_counted(qwen30):
    res = best(qwen30, ctx=8192, budget_usd=2500)
    unpriced = {r["device"] for r in res.unpriced}
    assert "ryzen-ai-max-395-64gb" in unpriced and all(r["price_usd"] is None for r in res.unpriced)
    note = next(n for n in res.notes if n.startswith("budget:"))
    assert f"{len(res.unpriced)} without a catalog price listed apart" in note


def test_used_says_how_many_rows_carry_a_used_price(qwen30):
    raw = json.loads(files("runlocal.data").joinpath("devices.json").read_text(encoding="utf-8"))
    with_used = {d["id"] for d in raw["devices"] if d.get("used_price_usd")}
    res = best(qwen30, ctx=8192, budget_usd=2500, used=True)
    used_rows = {r["device"] for r in res.ranked if r["price_kind"] == "used"}
    assert used_rows == with_used & {r["device"] for r in res.ranked}
    launch_rows = sum(1 for r in res.ranked if r["price_kind"] == "launch")
    note = next(n for n in res.notes if n.startswith("--used:"))
    assert f"recorded for {len(used_rows)} device(s)" in note and f"; {launch_rows} configuration(s)" in note


def test_cost_says_two_cards_at_full_tdp_is_an_upper_bound(qwen30):
    doc = cost(qwen30, find_device("rtx-3090"), 2, ctx=8192, hours_per_day=8)
    tdp = find_device("rtx-3090").tdp_w
    assert doc["own"]["kwh_per_year"] == pytest.approx(2 * tdp * 8 * 365 / 1000)     # 2 × 350 W: 2,044 kWh
    note = next(n for n in doc["notes"] if n.startswith("electricity:"))
    assert f"2 × {tdp:g} W" in note and "upper bound" in note and "take turns" in note
    # a share given with --utilization is the user's: no upper-bound note
    given = cost(qwen30, find_device("rtx-3090"), 2, ctx=8192, hours_per_day=8, utilization=0.5)
    assert not any(n.startswith("electricity:") for n in given["notes"])


def test_the_launch_prices_age_is_said(qwen30):
    """The years come from devices.json by hand: each ranked row's launch_year, or a dated price's own date."""
    raw = {d["id"]: d for d in json.loads(files("runlocal.data").joinpath("devices.json").read_text())["devices"]}
    res = best(qwen30, ctx=8192, budget_usd=2500)
    years = [int(str(raw[r["device"]].get("launch_price_as_of") or raw[r["device"]]["launch_year"])[:4])
             for r in res.ranked]
    note = next(n for n in res.notes if n.startswith("price:"))
    assert f"({min(years)} to {max(years)} here; JSON: price_as_of), not what a card sells for later" in note
