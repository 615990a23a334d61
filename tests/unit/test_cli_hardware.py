"""`runlocal hardware [QUERY]` (mends22; review21 found the CLI had no way to list or search the device catalog that
the API, MCP and the site search). Every expectation is read here from the data files themselves (devices.json,
cloud_prices.json, opened as JSON and filtered by hand), not from the code under test: the ids a filter keeps, the
launch price and the date it was set, the cheapest on-demand rent of one GPU with its date."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest
from typer.testing import CliRunner

from runlocal.cli import app as cli

GiB = 2**30


def _data(name: str) -> dict:
    return json.loads(files("runlocal.data").joinpath(name).read_text(encoding="utf-8"))


DEVICES = _data("devices.json")["devices"]
PRICES = _data("cloud_prices.json")["prices"]


def _bytes(d: dict) -> int:
    return int(d["memory_bytes"]) if "memory_bytes" in d else round(d["memory_gib"] * GiB)


def run(*words: str, columns: int = 200):
    return CliRunner().invoke(cli, ["hardware", *words], env={"COLUMNS": str(columns)})


def as_json(*words: str) -> list[dict]:
    result = run(*words, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_no_query_lists_the_whole_catalog_in_its_order():
    assert [r["id"] for r in as_json()] == [d["id"] for d in DEVICES]


def test_filters_keep_what_the_file_says():
    """--kind is the form factor `best --form` and the site's /hardware page filter by: a laptop card (devices.json's
    form_factor "laptop") is kind laptop, not gpu."""
    desktop = [d["id"] for d in DEVICES if d["kind"] == "gpu" and d.get("form_factor") != "laptop"
               and d["vendor"] == "nvidia" and _bytes(d) >= 16 * GiB]
    assert desktop and [r["id"] for r in as_json("--min-memory", "16G", "--kind", "gpu", "--vendor", "nvidia")] == desktop
    laptops = [d["id"] for d in DEVICES if d.get("form_factor") == "laptop"]
    assert laptops and [r["id"] for r in as_json("--kind", "laptop")] == laptops
    assert all(d["kind"] == "gpu" for d in DEVICES if d["id"] in laptops)
    apple_64 = [d["id"] for d in DEVICES if d["kind"] == "apple" and _bytes(d) >= 64 * GiB]
    assert [r["id"] for r in as_json("--kind", "APPLE", "--min-memory", "64G")] == apple_64
    # a query's words and a filter together: the 128 GB Strix Halo, not the 64 GB one
    assert [r["id"] for r in as_json("strix", "halo", "--min-memory", "100G")] == ["ryzen-ai-max-395-128gb"]


def test_an_alias_finds_its_device():
    spark = next(d for d in DEVICES if "gx10" in d.get("aliases", []))
    assert [r["id"] for r in as_json("gx10")] == [spark["id"]]


def _cheapest_one_gpu_offer(device_id: str) -> dict:
    offers = [p for p in PRICES if p["device"] == device_id and p.get("min_gpus", 1) <= 1]
    return min(offers, key=lambda p: p["usd_per_gpu_hour"])


def test_price_and_rent_with_their_dates():
    card = next(d for d in DEVICES if d["id"] == "rtx-4090")
    row = as_json("rtx-4090")[0]
    assert row["price_usd"] == card["launch_price_usd"] and row["price_as_of"] == str(card["launch_year"])
    offer = _cheapest_one_gpu_offer("rtx-4090")
    assert (row["rent_usd_per_gpu_hour"], row["rent_provider"], row["rent_price_date"], row["rent_url"]) == (
        offer["usd_per_gpu_hour"], offer["provider"], offer["price_date"], offer["url"])
    # a Mac priced from Apple's dated newsroom page: the date it was announced, not a year
    mac = next(d for d in DEVICES if d["kind"] == "apple" and d.get("launch_price_as_of"))
    row = next(r for r in as_json(mac["id"]) if r["id"] == mac["id"])
    assert row["price_as_of"] == mac["launch_price_as_of"] and row["price_source"] == mac["launch_price_source"]
    # no row in the cloud table: no rent, said as null
    unpriced = next(d["id"] for d in DEVICES if d["kind"] == "gpu" and not any(p["device"] == d["id"] for p in PRICES))
    assert next(r for r in as_json(unpriced) if r["id"] == unpriced)["rent_usd_per_gpu_hour"] is None


def test_an_offer_sold_only_in_larger_nodes_is_not_one_gpus_rent():
    nodes = [p for p in PRICES if p.get("min_gpus", 1) > 1]
    for p in nodes:
        row = next(r for r in as_json(p["device"]) if r["id"] == p["device"])
        singles = [q["usd_per_gpu_hour"] for q in PRICES if q["device"] == p["device"] and q.get("min_gpus", 1) <= 1]
        assert row["rent_usd_per_gpu_hour"] == (min(singles) if singles else None)


def test_unified_memory_states_the_gpus_share():
    strix = next(d for d in DEVICES if d["id"] == "ryzen-ai-max-395-128gb")
    row = as_json("ryzen-ai-max-395-128gb")[0]
    # the kernel's GTT limit: half of system RAM (devices.json notes.gpu_memory_share), 64 of 128 GiB
    assert row["memory_bytes"] == 128 * GiB and row["gpu_usable_bytes"] == int(128 * GiB * strix["gpu_memory_share"])
    assert row["gpu_usable_bytes"] == 64 * GiB


def test_table_and_detail_text():
    cpus = [d["id"] for d in DEVICES if d["kind"] == "cpu"]
    result = run("--kind", "cpu")
    assert result.exit_code == 0 and all(i in result.output for i in cpus), result.output
    assert f"{len(cpus)} devices" in result.output
    spark = next(d for d in DEVICES if "gx10" in d.get("aliases", []))
    detail = run("gx10").output
    assert "asus ascent gx10" in detail and f"${spark['launch_price_usd']:,.0f}" in detail
    four = run("rtx-4090", columns=80).output
    offer = _cheapest_one_gpu_offer("rtx-4090")
    assert f"${offer['usd_per_gpu_hour']:.2f}/GPU-h ({offer['price_date']})" in four and offer["provider"] in four
    # 80 columns: no line wider than the terminal
    assert max(len(line) for line in run(columns=80).output.splitlines()) <= 80


def test_unknown_query_is_one_line_with_close_matches():
    result = run("rtx", "4099")
    assert result.exit_code == 2
    line = result.output.strip()
    assert line.startswith("error: query: ") and "\n" not in line and "rtx-4090" in line, result.output


def test_filters_that_leave_nothing_say_so():
    result = run("4090", "--min-memory", "48G")
    assert result.exit_code == 1 and "no catalog device named '4090' with --min-memory 48G" in result.output
    assert as_json("4090", "--min-memory", "48G") == []


@pytest.mark.parametrize(("words", "field"), [(["--kind", "phone"], "kind"), (["--vendor", "acme"], "vendor"),
                                              (["--min-memory", "24"], "min-memory"),
                                              (["--min-memory", "lots"], "min-memory")])
def test_bad_filter_values_name_the_field(words, field):
    result = run(*words)
    assert result.exit_code == 2 and result.output.startswith(f"error: {field}: "), result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_three_doors_answer_one_record(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app
    from runlocal.mcp_server import hardware_doc

    client = TestClient(create_app(cors_origins=[]), base_url="http://127.0.0.1")
    api = client.get("/api/v1/hardware", params={"q": "4090", "min_memory": "20G"}).json()
    mcp = hardware_doc({"query": "4090", "min_memory": "20G", "kind": None, "vendor": None})
    assert api == mcp == as_json("4090", "--min-memory", "20G")
    assert [r["id"] for r in api] == ["rtx-4090"]
    bad = client.get("/api/v1/hardware", params={"kind": "phone"})
    assert bad.status_code == 422 and "kind: expected one of gpu, laptop, apple, unified, cpu, got 'phone'" in bad.text
