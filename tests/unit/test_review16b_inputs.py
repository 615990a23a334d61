"""review16b's findings on input as users type it (3, 4, 12): a size without a unit, non-finite amounts, and the
API's parity with the CLI and the site — each checked on the CLI and the HTTP API, which share one parser."""

import json
import math

import pytest
from asking import run_cli
from fastapi.testclient import TestClient

from runlocal import choose
from runlocal.api.app import create_app
from runlocal.errors import InputError
from runlocal.hardware.catalog import find_device
from runlocal.model.catalog import lookup


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = create_app(store_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'b.sqlite3'}", cors_origins=[])
    with TestClient(app) as c:
        yield c


def _strict_json(text: str):
    """json.loads that refuses NaN / Infinity, as every JSON parser but Python's does."""
    def refuse(name):
        raise AssertionError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------ 3. a size without a unit

def test_ram_without_a_unit_is_refused_on_the_cli_and_the_api(client):
    r = run_cli("check", "gpt-oss-120b", "--gpu", "rtx-4090", "--ram", "64")
    assert r.returncode == 2 and r.stderr.strip() == "error: ram: '64' has no unit — write 64G (GiB) or 64GB"
    a = client.get("/api/v1/check", params={"model": "gpt-oss-120b", "gpu": "rtx-4090", "ram": "64"})
    assert a.status_code == 422 and "'64' has no unit" in a.text and "ram" in a.text
    v = client.get("/api/v1/check", params={"model": "llama-3.1-8b", "vram": "2x24"})
    assert v.status_code == 422 and "'24' has no unit" in v.text


# ------------------------------------------------------------------ 4. NaN, ±inf and huge amounts

@pytest.mark.parametrize("flag, value, field", [
    ("--kwh-price", "nan", "kwh-price"), ("--price", "inf", "price"), ("--years", "nan", "years"),
    ("--rent-price", "1e400", "rent-price"), ("--hours-per-day", "-inf", "hours-per-day"),
    ("--utilization", "nan", "utilization"), ("--price", "1e12", "price"),
])
def test_cost_refuses_non_finite_and_unbounded_amounts(flag, value, field):
    r = run_cli("cost", "llama-3.1-8b", "--gpu", "rtx-4090", flag, value, "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"error: {field}: must be a finite number") and "Traceback" not in r.stderr


@pytest.mark.parametrize("budget", ["nan", "inf", "-1", "0"])
def test_best_refuses_a_budget_that_is_no_amount(budget):
    r = run_cli("best", "llama-3.1-8b", "--budget", budget, "--json")
    assert r.returncode == 2 and r.stderr.startswith("error: budget: must be a finite number of USD")


def test_cost_at_its_bounds_stays_finite_and_valid_json():
    """The extremes COST_BOUNDS lets through give finite figures. By hand: 1e9 USD over 0.01 years is 1e11 USD a
    year; 0.01 h/day is 3.65 h a year."""
    r = run_cli("cost", "llama-3.1-8b", "--gpu", "rtx-4090", "--price", "1e9", "--years", "0.01",
                "--hours-per-day", "0.01", "--kwh-price", "100", "--rent-price", "1e6", "--json")
    assert r.returncode == 0, r.stderr
    doc = _strict_json(r.stdout)
    assert doc["own"]["amortised_per_year_usd"] == pytest.approx(1e9 / 0.01)
    assert doc["rent"]["per_year_usd"] == pytest.approx(1e6 * 0.01 * 365)
    assert math.isfinite(doc["own"]["per_million_tokens_usd"])


@pytest.mark.parametrize("param, value", [("kwh", "inf"), ("price", "inf"), ("rent", "1e400"), ("years", "nan"),
                                          ("price", "9" * 500)])
def test_the_cost_page_answers_422_not_500(client, param, value):
    r = client.get("/cost", params={"model": "llama-3.1-8b", "gpu": "rtx-4090", param: value})
    assert r.status_code == 422 and "finite" in r.text


def test_library_refuses_what_the_cli_refuses():
    with pytest.raises(InputError, match="kwh-price"):
        choose.cost(lookup("llama-3.1-8b"), find_device("rtx-4090"), 1, kwh_price=float("nan"))
    with pytest.raises(InputError, match="budget"):
        choose.best(lookup("llama-3.1-8b"), budget_usd=float("inf"))


# ------------------------------------------------------------------ 6. a VRAM figure in compare

def test_compare_takes_a_vram_figure_on_the_cli_the_api_and_the_site_alike(client):
    """One parser (compare.vram_figure) for all three; rows in the order typed; the figure planned at the rows' one
    quant. llama-3.1-8b's Q4_K_M file is about 4.9 GB, well inside 20 GiB, so the download (Q4_K_M, as `check`
    plans it) is held by every device and is the quant of every row."""
    r = run_cli("compare", "rtx-4090", "20G", "2x3090", "--model", "llama-3.1-8b", "--json")
    assert r.returncode == 0, r.stderr
    cli = _strict_json(r.stdout)
    assert [x["spec"] for x in cli] == ["rtx-4090", "20G", "2x rtx-3090"]
    assert {x["quant"] for x in cli} == {"Q4_K_M"}
    figure = cli[1]
    assert figure["id"] is None and figure["memory_bytes"] == 20 * 2**30 and figure["verdict"] == "fits"
    # no bandwidth for a figure: no speed and no value per dollar, whatever the plan's CPU side would give
    assert figure["decode_tokens_per_s"] is None and "tokens_per_s_per_1000_usd" not in figure
    api = client.get("/api/v1/compare", params={"devices": "rtx-4090,20G,2x3090", "model": "llama-3.1-8b"})
    assert api.status_code == 200 and api.json() == cli
    page = client.get("/compare", params={"d": ["rtx-4090", "20G", "2x3090"], "model": "llama-3.1-8b"})
    result = page.text.split("<tbody>", 1)[1].split("</tbody>", 1)[0]     # the table, not the form's device list
    names = ["NVIDIA GeForce RTX 4090", "Custom GPU, 20G", "2 × NVIDIA GeForce RTX 3090"]
    assert all(n in result for n in names) and sorted(names, key=result.index) == names
    assert result.count(">Q4_K_M<") == 3


def test_a_tiny_vram_figure_shows_no_speed():
    """review16b: d=0.0001G showed 'Decode tok/s 9.5' under 'A VRAM figure has no bandwidth, so no speed'."""
    r = run_cli("compare", "0.0001G", "--model", "llama-3.1-8b", "--json")
    row = _strict_json(r.stdout)[0]
    assert row["verdict"] == "does_not_fit" and row["decode_tokens_per_s"] is None
    assert row["prefill_tokens_per_s"] is None


@pytest.mark.parametrize("bad", ["20", "20X", "0G"])
def test_a_figure_that_is_no_size_is_refused(bad):
    r = run_cli("compare", "rtx-4090", bad, "--model", "llama-3.1-8b")
    assert r.returncode == 2 and r.stderr.startswith("error:") and "Traceback" not in r.stderr
