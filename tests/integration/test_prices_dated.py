"""Issue 20, point 5: "which price is this, and from when?" — `runlocal compare / best / cost` show the new price
with its launch year and the used price with the date of its source (or the day it was read, where the page
states none), in the text and in --json.

Expected values come from the question and the cited catalog entry (an RTX 3090: 1,499 USD at launch in 2020,
a used-market price read from a dated page), not from the code under test."""

import json
import re
import shlex

import pytest
from typer.testing import CliRunner

from runlocal.cli import app

pytestmark = pytest.mark.slow      # compare plans the largest catalog model per card: seconds on shared cores

DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def typed(command: str) -> str:
    words = shlex.split(command)
    assert words[0] == "runlocal"
    result = CliRunner().invoke(app, words[1:], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return result.output


def test_compare_json_gives_the_launch_year_and_the_used_price_date():
    rows = {r["id"]: r for r in json.loads(typed("runlocal compare rtx-3090 rtx-4090 --json"))}
    assert rows["rtx-3090"]["launch_price_usd"] == 1499 and rows["rtx-3090"]["launch_year"] == 2020
    assert rows["rtx-4090"]["launch_year"] == 2022
    assert rows["rtx-3090"]["used_price_usd"]
    assert DATE.search(rows["rtx-3090"]["used_price_as_of"])      # a day, not just a source
    assert rows["rtx-4090"]["used_price_usd"] is None and rows["rtx-4090"]["used_price_as_of"] is None


def test_compare_text_shows_both_dates_on_the_price_lines():
    lines = typed("runlocal compare rtx-3090 rtx-4090").splitlines()
    (new,) = [line for line in lines if line.startswith("new (launch) USD")]
    (used,) = [line for line in lines if line.startswith("used USD")]
    assert "1,499 (2020)" in new and "(2022)" in new
    assert "750" in used and DATE.search(used)     # bestllmfor.com, "around $750", page dated 2026-05-16 (used_prices)


def test_every_used_price_in_the_catalog_carries_a_date():
    from runlocal.choose import device_records

    used = {k: d for k, d in device_records().items() if d.get("used_price_usd")}
    assert used, "the catalog should have at least one used-market price (the RTX 3090)"
    for dev_id, d in used.items():
        assert d.get("used_price_source"), dev_id
        assert DATE.search(str(d.get("used_price_as_of") or "")), f"{dev_id}: used price without a date"


def test_best_used_dates_the_used_price_and_gives_launch_years_for_the_rest():
    doc = json.loads(typed("runlocal best qwen3-8b --used --json"))
    rows = {r["device"]: r for r in doc["ranked"]}
    assert rows["rtx-3090"]["price_kind"] == "used" and DATE.search(rows["rtx-3090"]["price_as_of"])
    assert rows["rtx-4090"]["price_kind"] == "launch" and rows["rtx-4090"]["price_as_of"] == "2022"
    text = typed("runlocal best qwen3-8b --used --top 100")
    (row,) = [line for line in text.splitlines() if re.match(r"\d+\s+rtx-3090\s", line)]
    assert "750*" in row and DATE.search(row)      # measurements/used_prices records.jsonl: rtx-3090 750


def test_cost_names_the_price_it_used_and_its_date():
    own = json.loads(typed("runlocal cost qwen3-8b --gpu 3090 --used --json"))["own"]
    assert own["price_kind"] == "used" and DATE.search(own["price_as_of"])
    own = json.loads(typed("runlocal cost qwen3-8b --gpu 3090 --json"))["own"]
    assert own["price_kind"] == "launch" and own["price_as_of"] == "2020"
    (purchase,) = [line for line in typed("runlocal cost qwen3-8b --gpu 3090").splitlines()
                   if line.startswith("purchase")]
    assert "1,499" in purchase and "launch, 2020" in purchase
