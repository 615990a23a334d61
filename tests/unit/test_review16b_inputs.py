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
