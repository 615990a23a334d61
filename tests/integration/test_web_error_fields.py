"""Every site page's error box names the field the input was wrong in, as the page's form names it (site23: a
newcomer's walk through the site). An unknown model or device had said only "unknown model 'x'"; the Cost page's
amounts had said "kwh_price: must be above -1e-12" and "hours-per-day: …" (the CLI's flag, a name the page has no
field for) where the CLI, /api/v1/cost and MCP say the bound (amounts.COST_BOUNDS: kWh price 0 … 100 USD,
hours a day 0.01 … 24, budget 0.01 … 1,000,000,000 USD)."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def client():
    from runlocal.testing.browser import served_app

    return TestClient(served_app(), base_url="http://127.0.0.1")


def error_box(page) -> str:
    """The text of the page's one error box (macros.html: "Cannot answer that" and the line)."""
    boxes = re.findall(r'<div class="error" role="alert"><h2>Cannot answer that</h2><p>(.*?)</p></div>', page.text,
                       re.S)
    assert len(boxes) == 1, page.text[:400]
    return html.unescape(boxes[0])


@pytest.mark.parametrize(("url", "line"), [
    ("/?model=nosuchmodel-xyz&gpu=rtx-4090", "model: unknown model 'nosuchmodel-xyz'"),
    ("/?model=llama-3.1-8b&gpu=nosuchgpu-xyz", "gpu: unknown device 'nosuchgpu-xyz'"),
    ("/best?model=nosuchmodel-xyz", "model: unknown model 'nosuchmodel-xyz'"),
    ("/cost?model=nosuchmodel-xyz&gpu=rtx-4090", "model: unknown model 'nosuchmodel-xyz'"),
    ("/cost?model=llama-3.1-8b&gpu=nosuchgpu-xyz", "gpu: unknown device 'nosuchgpu-xyz'"),
    ("/compare?model=nosuchmodel-xyz&d=rtx-4090", "model: unknown model 'nosuchmodel-xyz'"),
    # Compare's device rows are its d fields; a query written with /api/v1/compare's devices= is answered so
    ("/compare?model=llama-3.1-8b&d=rtx-4090&d=nosuchgpu-xyz", "d: unknown device 'nosuchgpu-xyz'"),
    ("/compare?model=llama-3.1-8b&devices=rtx-4090,nosuchgpu-xyz", "devices: unknown device 'nosuchgpu-xyz'"),
    ("/compare?model=llama-3.1-8b&devices=", "devices: name at least one device"),
])
def test_an_unknown_name_is_refused_naming_its_field(client, url, line):
    page = client.get(url)
    assert page.status_code == 422
    assert error_box(page).startswith(line)


@pytest.mark.parametrize(("query", "line"), [
    # the bounds of amounts.COST_BOUNDS, in check_amount's words: "NAME: must be a finite number of WHAT from LO to
    # HI, got VALUE", under the Cost form's field names (cost.html: hours_per_day, kwh_price, years, price, rent_price)
    ("kwh_price=-1", "kwh_price: must be a finite number of USD per kWh from 0 to 100, got -1"),
    ("hours_per_day=30", "hours_per_day: must be a finite number of hours a day from 0.01 to 24, got 30"),
    ("hours_per_day=0", "hours_per_day: must be a finite number of hours a day from 0.01 to 24, got 0"),
    ("years=0", "years: must be a finite number of years from 0.01 to 100, got 0"),
    ("rent_price=inf", "rent_price: must be a finite number of USD per GPU-hour from 0.0001 to 1,000,000, got inf"),
    ("price=abc", "price: expected a number, got 'abc'"),
])
def test_a_cost_amount_out_of_bounds_is_the_contract_line(client, query, line):
    page = client.get(f"/cost?model=llama-3.1-8b&gpu=rtx-4090&{query}")
    assert page.status_code == 422
    assert error_box(page) == line
    name, _, value = query.partition("=")
    assert f'name="{name}"' in page.text and f'value="{value}"' in page.text     # the form keeps what was typed


def test_a_free_kwh_price_is_planned_at_zero_not_the_default(client):
    # 0 USD/kWh is inside the bound (0 … 100): own solar, not a blank field; the default is 0.18
    page = client.get("/cost?model=llama-3.1-8b&gpu=rtx-4090&kwh_price=0")
    assert page.status_code == 200
    assert 'name="kwh_price"' in page.text and 'value="0"' in page.text
    assert "× $0.0/kWh" in html.unescape(page.text)          # the owning line prices the power at 0


def test_best_budget_is_refused_in_the_contract_words(client):
    page = client.get("/best?model=llama-3.1-8b&budget=-5")
    assert page.status_code == 422
    assert error_box(page) == "budget: must be a finite number of USD from 0.01 to 1,000,000,000, got -5"


@pytest.mark.parametrize(("query", "line"), [
    # `runlocal hardware --kind xx` says "kind: expected one of gpu, laptop, apple, unified, cpu, got 'xx'" (exit 2);
    # the page had answered 200 "0 devices" under menus reading "any"
    ("kind=xx", "kind: expected one of gpu, laptop, apple, unified, cpu, got 'xx'"),
    ("vendor=yy", "vendor: expected one of nvidia, amd, intel, apple, generic, got 'yy'"),
])
def test_a_hardware_filter_the_catalog_has_no_such_value_of_is_refused(client, query, line):
    page = client.get(f"/hardware?{query}")
    assert page.status_code == 422
    assert error_box(page) == line


def test_a_hardware_filter_still_filters(client):
    # every laptop GPU row is one; the 4090 laptop card is in the catalog (hardware/data)
    page = client.get("/hardware?kind=laptop&vendor=nvidia")
    assert page.status_code == 200 and 'class="error"' not in page.text
    assert "/hardware/rtx-4090-laptop" in page.text and "/hardware/rtx-4090\"" not in page.text


def test_the_cost_form_carries_its_context_and_takes_what_the_bounds_take(client):
    # the page reads ctx (its query is /api/v1/cost's) but had no field for it: resubmitting the form planned at the
    # default 8,192 without a word, and ctx=abc was refused with no field to correct it (site23)
    page = client.get("/cost?model=llama-3.1-8b&gpu=rtx-4090&ctx=abc")
    assert page.status_code == 422
    assert error_box(page) == "ctx: 'abc' is not a token count (expected e.g. 8192 or 32k)"
    assert re.search(r'<input id="ctx" name="ctx" value="abc"', page.text)
    # the browser's own checks allow what the server takes (hours a day 0.01 … 24, years 0.01 … 100, any step):
    # min="0.1" step="0.1" and min="0.5" step="0.5" had stopped 0.05 h a day or 1.25 years in the browser
    ok = client.get("/cost?model=llama-3.1-8b&gpu=rtx-4090&years=1.25&hours_per_day=0.05")
    assert ok.status_code == 200
    assert re.search(r'<input id="hours_per_day"[^>]* min="0.01" max="24.0" step="any"', ok.text)
    assert re.search(r'<input id="years"[^>]* min="0.01" max="100.0" step="any"', ok.text)
