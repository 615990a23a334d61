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
    site = client.get("/", params={"model": "gpt-oss-120b", "gpu": "rtx-4090", "ram": "64"})   # the form's field
    assert site.status_code == 422 and "ram: &#39;64&#39; has no unit — write 64G (GiB) or 64GB" in site.text
    assert "Does not fit" not in site.text


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


# ------------------------------------------------------------------ 12. the API's parity with the CLI and the site

def test_api_cost_is_the_cli_cost_and_matches_hand_arithmetic(client):
    """review16b's own hand figures for an RTX 4090 with llama-3.1-8b at the defaults (8 h/day, $0.18/kWh, 3 years,
    the 4090's $1,599 launch price, 450 W): 1,599 / 3 = 533 a year; 0.45 kW × 8 h × 365 = 1,314 kWh × 0.18 = 236.52;
    owning 533 + 236.52 = 769.52 a year; break-even 533 / (365 × (0.34 − 0.45 × 0.18)) = 5.64 h/day at the table's
    $0.34 per GPU-hour."""
    r = client.get("/api/v1/cost", params={"model": "llama-3.1-8b", "gpu": "rtx-4090"})
    assert r.status_code == 200, r.text
    doc = _strict_json(r.text)
    assert doc["own"]["amortised_per_year_usd"] == 533.0
    assert doc["own"]["electricity_per_year_usd"] == 236.52
    assert doc["own"]["per_year_usd"] == 769.52
    assert doc["rent"]["usd_per_gpu_hour"] == 0.34 and doc["breakeven_hours_per_day"] == 5.64
    cli = run_cli("cost", "llama-3.1-8b", "--gpu", "rtx-4090", "--json")
    assert _strict_json(cli.stdout) == doc


@pytest.mark.parametrize("param, value", [("kwh_price", "inf"), ("price", "1e400"), ("years", "nan"),
                                          ("hours_per_day", "30"), ("rent_price", "-1")])
def test_api_cost_refuses_what_the_cli_refuses(client, param, value):
    r = client.get("/api/v1/cost", params={"model": "llama-3.1-8b", "gpu": "rtx-4090", param: value})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", param]


def test_best_takes_a_size_and_the_sites_filters_on_the_cli_and_the_api(client):
    """'30B' as the site reads it: the catalog model with the nearest published parameter count; vendor and form
    factor as the site's Best GPU page filters them."""
    from runlocal.hardware.catalog import load_devices
    from runlocal.model import catalog
    from runlocal.shopping import form_factor

    nearest = min((e for e in catalog.load_entries() if e.get("published_params")),
                  key=lambda e: abs(e["published_params"] - 30e9))
    api = client.get("/api/v1/best", params={"model": "30B", "vendor": "nvidia", "form": "laptop"})
    assert api.status_code == 200, api.text
    doc = api.json()
    assert doc["model"]["id"] == nearest["alias"]
    assert doc["notes"][0].startswith(f"“30B” ranked as {nearest['alias']}")
    rows = doc["ranked"] + doc["unpriced"]
    devices = {d.id: d for d in load_devices()}
    assert rows and all(devices[r["device"]].vendor == "nvidia" and form_factor(devices[r["device"]]) == "laptop"
                        for r in rows)
    cli = run_cli("best", "30B", "--vendor", "nvidia", "--form", "laptop", "--json")
    assert cli.returncode == 0 and _strict_json(cli.stdout) == doc
    bad = client.get("/api/v1/best", params={"model": "8B", "form": "tablet"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "form"]
    assert run_cli("best", "8B", "--vendor", "acme").stderr.startswith("error: vendor: expected one of nvidia")
