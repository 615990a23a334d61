"""Choosing hardware: `best` rankings, `compare`, `models --fits` (the sweep), `cost` arithmetic, the CLI's JSON
and errors, /api/v1/best — and planning a CPU-only catalog entry as a CPU run."""

import json
from dataclasses import replace
from importlib import resources

import numpy as np
import pytest
from asking import run_cli

from runlocal import choose, fits_here
from runlocal.check import CheckRequest, check
from runlocal.compare import compare_devices
from runlocal.errors import InputError, UnknownDeviceError
from runlocal.hardware.catalog import find_device, load_devices
from runlocal.hardware.targets import targets_from_options
from runlocal.model.catalog import lookup

GiB = 1024**3


@pytest.fixture(scope="module")
def llama8b():
    return lookup("llama-3.1-8b")


@pytest.fixture(scope="module")
def llama70b():
    return lookup("llama-3.1-70b")


@pytest.fixture(scope="module")
def best70(llama70b):
    return choose.best(llama70b, ctx=8192, runtime="llama.cpp")


@pytest.fixture(scope="module")
def best8(llama8b):
    return choose.best(llama8b, ctx=8192, runtime="llama.cpp")


def _data(name):
    return json.loads(resources.files("runlocal.data").joinpath(name).read_text(encoding="utf-8"))


def run(*args):
    return run_cli(*args)


# ---------------------------------------------------------------- best: consistency of the ranking

def test_every_ranked_configuration_runs_whole_and_the_ranking_is_by_speed_per_dollar(best8, llama8b):
    rows = best8.ranked
    assert len(rows) > 20
    scores = [r["tokens_per_s_per_1000_usd"] for r in rows]
    assert scores == sorted(scores, reverse=True)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    for r in rows:
        assert r["verdict"] in ("fits", "tight") and r["peak_bytes"] <= r["capacity_bytes"]
        per_k = r["decode_tokens_per_s"] / r["price_usd"] * 1000
        assert r["tokens_per_s_per_1000_usd"] == pytest.approx(per_k, abs=1e-3)
        assert r["quant"] in choose.QUANT_LADDERS["llama.cpp"] and r["quant"] in r["command"]
    # re-planned one by one, each row's configuration fits
    for r in rows[:5]:
        dev = find_device(r["device"])
        fit = choose.plan_fit(llama8b, choose.device_targets(dev, r["count"]), runtime="llama.cpp", ctx=8192,
                              quant=r["quant"])
        assert fit.runs


def test_a_device_that_does_not_fit_never_appears(best70, llama70b):
    listed = {r["device"] for r in best70.ranked + best70.unpriced if r["count"] == 1}
    # 70B at Q4_K_M is ~40 GiB of weights: no 24 GiB card can hold it whole (two can: llama.cpp splits layers)
    for dev_id in ("rtx-4090", "rtx-3090", "rtx-4060", "arc-b580"):
        assert dev_id not in listed
        fit = choose.best_fit(llama70b, choose.device_targets(find_device(dev_id)), runtime="llama.cpp", ctx=8192,
                              quants=choose.QUANT_LADDERS["llama.cpp"])
        assert fit is None
    assert "h100-sxm" in listed and "rtx-a6000" in listed


def test_doubling_the_price_halves_the_score(llama8b):
    devs = [find_device("rtx-4090"), find_device("rtx-3060-12gb")]
    base = choose.best(llama8b, ctx=4096, devices=devs)
    dear = choose.best(llama8b, ctx=4096, devices=[replace(d, launch_price_usd=d.launch_price_usd * 2) for d in devs])
    by_id = {r["device"]: r for r in base.ranked}
    for r in dear.ranked:
        assert r["tokens_per_s_per_1000_usd"] == pytest.approx(by_id[r["device"]]["tokens_per_s_per_1000_usd"] / 2,
                                                                rel=1e-3)
        assert r["decode_tokens_per_s"] == by_id[r["device"]]["decode_tokens_per_s"]


def test_budget_filters_and_counts_what_it_left_out(best8, llama8b):
    budget = 500.0
    cut = choose.best(llama8b, ctx=8192, budget_usd=budget)
    assert cut.ranked and all(r["price_usd"] <= budget for r in cut.ranked)
    assert [r["spec"] for r in cut.ranked] == [r["spec"] for r in best8.ranked if r["price_usd"] <= budget]
    assert cut.over_budget == sum(1 for r in best8.ranked if r["price_usd"] > budget)
    # no price, no way to honour a budget: listed apart, unranked, not dropped unsaid (review21 #5)
    assert [r["spec"] for r in cut.unpriced] == [r["spec"] for r in best8.unpriced]
    with pytest.raises(InputError):
        choose.best(llama8b, budget_usd=0)


def test_used_prices_where_cited_and_launch_prices_otherwise(llama8b):
    res = choose.best(llama8b, ctx=8192, used=True, devices=[find_device("rtx-3090"), find_device("rtx-4090")])
    by_id = {r["device"]: r for r in res.ranked}
    raw = {d["id"]: d for d in _data("devices.json")["devices"]}
    assert by_id["rtx-3090"]["price_kind"] == "used"
    assert by_id["rtx-3090"]["unit_price_usd"] == raw["rtx-3090"]["used_price_usd"]
    assert by_id["rtx-3090"]["price_source"].startswith("https://")
    assert by_id["rtx-4090"]["price_kind"] == "launch" and by_id["rtx-4090"]["price_note"]
    assert "--used: a used-market price is recorded for 1 device(s) here (rtx-3090); 1 configuration(s)" in " ".join(
        res.notes)


def test_multi_gpu_rows_only_for_runtimes_that_split(llama70b):
    assert choose.splits_over_gpus("vllm") is True
    res = choose.best(llama70b, ctx=8192, runtime="vllm", devices=[find_device("rtx-3090")])
    assert res.ranked and res.ranked[0]["count"] in (2, 4, 8)
    assert "--tensor-parallel-size" in res.ranked[0]["command"]
    # the smallest count that runs it is the one listed
    assert len(res.ranked) == 1
    if not choose.splits_over_gpus("llama.cpp"):
        assert all(r["count"] == 1 for r in choose.best(llama70b, ctx=8192, devices=[find_device("rtx-3090")]).ranked)


def test_a_gguf_file_is_ranked_as_it_is(tmp_path):
    from factories import write_llama_gguf

    from runlocal.model.resolve import resolve_model

    path = write_llama_gguf(tmp_path / "llama8b.gguf", n_layers=32, hidden=4096, heads=32, kv_heads=8, ff=14336,
                            vocab=128256, tokens=1000)
    spec = resolve_model(str(path))
    res = choose.best(spec, ctx=8192, devices=[find_device("rtx-4090"), find_device("rtx-4060")])
    # the 8.5 GB Q8_0 file does not fit one 8 GiB card (two hold it: llama.cpp splits the layers)
    assert [r["spec"] for r in res.ranked if r["count"] == 1] == ["rtx-4090"]
    assert {r["spec"] for r in res.ranked if r["device"] == "rtx-4060"} <= {"2x rtx-4060", "4x rtx-4060", "8x rtx-4060"}
    one = next(r for r in res.ranked if r["spec"] == "rtx-4090")
    assert str(path) in one["command"] and one["settings"]["quant"] is None
    forced = choose.best(spec, ctx=8192, quant="Q4_K_M", devices=[find_device("rtx-4060")])
    assert forced.ranked and forced.ranked[0]["quant"] == "Q4_K_M"


def test_weights_left_on_disk_are_not_a_fit():
    # Transformers' device_map="auto" spills what does not fit to an offload folder: that is not "runs it"
    big = lookup("deepseek-v3")
    fit = choose.plan_fit(big, choose.device_targets(find_device("mi355x")), runtime="transformers", ctx=8192,
                          quant="bf16")
    assert fit.offloaded and not fit.runs


def test_runtime_device_compatibility():
    assert choose.runtime_runs_on("mlx", find_device("m3 max 64gb"))
    assert not choose.runtime_runs_on("mlx", find_device("4090"))
    assert not choose.runtime_runs_on("vllm", find_device("m3 max 64gb"))
    assert choose.runtime_runs_on("llama.cpp", find_device("ddr5-6400 2ch"))


# ---------------------------------------------------------------- compare

def test_compare_rows(llama8b):
    rows = compare_devices(["4090", "2x3090", "ddr5-6400 2ch"], model="llama-3.1-8b", ctx=8192)
    assert [r["spec"] for r in rows] == ["rtx-4090", "2x rtx-3090", "cpu-ddr5-6400-2ch"]
    r4090, r3090, cpu = rows
    assert r3090["count"] == 2 and r3090["memory_bytes"] == 48 * GiB and r3090["price_usd"] == 2 * 1499
    assert r4090["largest_model"]["alias"] and r4090["largest_model"]["ctx"] == 8192
    for r in rows:
        assert r["verdict"] in ("fits", "tight") and r["decode_tokens_per_s"] > 0 and r["max_context"] >= 8192
    assert cpu["kind"] == "cpu" and cpu["decode_tokens_per_s"] < r4090["decode_tokens_per_s"]
    with pytest.raises(UnknownDeviceError):
        compare_devices(["4090", "rtx 9999 ultra"])


# ---------------------------------------------------------------- models --fits (the sweep)

def test_fits_here_agrees_with_the_planner():
    doc = fits_here.fits_here("4090", ctx=8192)
    cuda_total = int(23.64 * GiB)         # what CUDA reports for a 4090 (torch OOM lines, ali-vilab/VGen#104)
    assert doc["capacity_bytes"] == cuda_total and doc["models"]
    sizes = [r["rank"] for r in doc["models"]]
    assert sizes == list(range(1, len(sizes) + 1))
    for r in doc["models"]:
        assert r["peak_bytes"] <= cuda_total
        assert r["decode_tokens_per_s"] is None or r["decode_tokens_per_s"] > 0
    # the sweep's verdict matches a real plan at the quant it picked (a few models)
    targets, _ = targets_from_options("4090", None, None)
    for r in doc["models"][:3]:
        fit = choose.plan_fit(lookup(r["alias"]), targets, runtime="llama.cpp", ctx=8192, quant=r["quant"])
        assert fit.verdict in ("fits", "tight")
    assert "llama-3.1-405b" not in {r["alias"] for r in doc["models"]}


def test_fits_rows_carry_checks_verdict_fits_first():
    # review16: a 3060 row at 98 % of the card ranked first with no verdict, while check called it tight
    doc = fits_here.fits_here("rtx-3060", ctx=8192)
    verdicts = [r["verdict"] for r in doc["models"]]
    assert set(verdicts) == {"fits", "tight"}
    # every "fits" before every "tight" within each format group (Q4_K_M or better first: fits_here.below_chosen)
    for low in (False, True):
        group = [r["verdict"] for r in doc["models"] if r["degraded"] is low]
        assert group == sorted(group, key=lambda v: v != "fits")
    cap = doc["capacity_bytes"]
    for r in doc["models"]:
        # check's rules by hand: above 90 % of the card, or under 1 GiB left on a GPU named (not read)
        tight = r["peak_bytes"] > 0.9 * cap or cap - r["peak_bytes"] < GiB
        assert r["verdict"] == ("tight" if tight else "fits"), r
    # and check itself, every layer pinned as the rows are, agrees on the first row of each verdict
    targets, _ = targets_from_options("rtx-3060", None, None)
    for v in ("fits", "tight"):
        r = next(r for r in doc["models"] if r["verdict"] == v)
        fit = choose.plan_fit(lookup(r["alias"]), targets, runtime="llama.cpp", ctx=8192, quant=r["quant"])
        plan = check(CheckRequest(model=r["alias"], gpu="rtx-3060", ctx=8192, quant=r["quant"], n_gpu_layers=-2,
                                  use_measurements=False))[0]
        assert fit.verdict in ("fits", "tight") and plan.verdict == v, (r["alias"], plan.verdict)
    assert any("every layer on the GPU" in n for n in doc["notes"])


def test_fits_groups_fine_tunes_that_plan_the_same():
    doc = fits_here.fits_here("rtx-3060", ctx=8192)
    shown = [r["alias"] for r in doc["models"]] + [a for r in doc["models"] for a in r["alike"]]
    assert len(shown) == len(set(shown))                                     # each model once
    whole = fits_here.models_fitting(doc["capacity_bytes"], 8192)               # ungrouped
    assert sorted(shown) == sorted(r["alias"] for r in whole)
    by_alias = {r["alias"]: r for r in whole}
    for r in doc["models"]:
        for a in r["alike"]:
            assert (by_alias[a]["weights_bytes"], by_alias[a]["peak_bytes"]) == (r["weights_bytes"], r["peak_bytes"])


def test_fits_here_on_a_cpu_system():
    doc = fits_here.fits_here("ddr5-6400 2ch", ctx=4096)
    assert doc["devices"][0]["kind"] == "cpu" and doc["capacity_bytes"] == 64 * GiB
    assert any("CPU run" in n or "no GPU" in n for n in doc["notes"])


def test_sweep_throughput_is_above_a_million_per_second():
    import time

    from runlocal.sweep import SWEEP_CONTEXTS, catalog_lines, fits_matrix

    _, a, b, _, lim = catalog_lines()
    caps = np.array([d.gpu_usable_bytes for d in load_devices()], dtype=np.float64)
    ctxs = np.array(SWEEP_CONTEXTS, dtype=np.float64)
    t0 = time.perf_counter()
    ok = fits_matrix(a, b, ctxs, caps, lim)
    dt = time.perf_counter() - t0
    assert ok.size / dt > 1e6


# ---------------------------------------------------------------- cost: against hand arithmetic from the data files

def test_cost_matches_hand_arithmetic(llama8b):
    devices = {d["id"]: d for d in _data("devices.json")["devices"]}
    prices = _data("cloud_prices.json")["prices"]
    d = devices["rtx-4090"]
    cheapest = min(p["usd_per_gpu_hour"] for p in prices if p["device"] == "rtx-4090" and p["usd_per_gpu_hour"])
    doc = choose.cost(llama8b, find_device("rtx-4090"), 1, hours_per_day=8, kwh_price=0.20, years=3, utilization=0.5)
    hours = 8 * 365
    amortised = d["launch_price_usd"] / 3
    kwh = d["tdp_w"] * 0.5 / 1000 * hours
    own = amortised + kwh * 0.20
    rent = cheapest * hours
    assert doc["own"]["purchase_usd"] == d["launch_price_usd"]
    assert doc["own"]["amortised_per_year_usd"] == pytest.approx(amortised, abs=0.01)
    assert doc["own"]["kwh_per_year"] == pytest.approx(kwh, abs=0.01)
    assert doc["own"]["per_year_usd"] == pytest.approx(own, abs=0.01)
    assert doc["rent"]["usd_per_gpu_hour"] == cheapest
    assert doc["rent"]["per_year_usd"] == pytest.approx(rent, abs=0.01)
    assert doc["cheaper"] == ("own" if own < rent else "rent")
    # break-even hours/day: where amortised/365 = h × (rent/h − kW × price)
    h = amortised / 365 / (cheapest - d["tdp_w"] * 0.5 / 1000 * 0.20)
    assert doc["breakeven_hours_per_day"] == pytest.approx(h, abs=0.01)
    tokens = doc["run"]["decode_tokens_per_s"] * 3600 * hours
    assert doc["own"]["per_million_tokens_usd"] == pytest.approx(own / tokens * 1e6, rel=1e-3)
    assert doc["rent"]["per_million_tokens_usd"] == pytest.approx(rent / tokens * 1e6, rel=1e-3)


def test_cost_scales_with_the_count_and_says_what_is_missing(llama8b):
    one = choose.cost(llama8b, find_device("rtx-4090"), 1)
    two = choose.cost(llama8b, find_device("rtx-4090"), 2)
    assert two["own"]["purchase_usd"] == 2 * one["own"]["purchase_usd"]
    assert two["rent"]["per_year_usd"] == pytest.approx(2 * one["rent"]["per_year_usd"], abs=0.02)
    h100 = choose.cost(llama8b, find_device("h100"), 1)              # no purchase price in the catalog
    assert h100["own"]["purchase_usd"] is None and h100["rent"]["usd_per_gpu_hour"] > 0
    assert any("--price" in n for n in h100["notes"])
    given = choose.cost(llama8b, find_device("h100"), 1, price_usd=25000)
    assert given["own"]["amortised_per_year_usd"] == pytest.approx(25000 / 3, abs=0.01)
    for bad in ({"hours_per_day": 0}, {"hours_per_day": 25}, {"kwh_price": -1}, {"years": 0}, {"utilization": 1.5}):
        with pytest.raises(InputError):
            choose.cost(llama8b, find_device("rtx-4090"), 1, **bad)


def test_cloud_price_table_cites_every_row():
    doc = choose.cloud_prices()
    assert doc["read_on"]
    ids = {d.id for d in load_devices()}
    for row in doc["prices"]:
        assert row["device"] in ids, row
        assert row["url"].startswith("https://") and row["read_on"] and row["usd_per_gpu_hour"] > 0
        assert row.get("via") in doc["sources"]
    covered = {r["device"] for r in doc["prices"]}
    assert {"h100-sxm", "a100-sxm-80gb", "l40s", "rtx-4090", "l4", "a10g"} <= covered


# ---------------------------------------------------------------- a CPU-only catalog entry is a CPU run

def test_cpu_entry_is_planned_as_a_cpu_run():
    dev = find_device("ddr5-6400 12ch")
    targets, notes = targets_from_options("ddr5-6400 12ch", None, None)
    assert len(targets) == 1 and targets[0].kind == "cpu"
    assert targets[0].capacity == dev.memory_bytes and targets[0].bandwidth_gbs == dev.bandwidth_gbs
    assert any("CPU run" in n for n in notes)
    sized, _ = targets_from_options("ddr5-6400 12ch", None, "128G")
    assert sized[0].capacity == 128 * GiB
    both, _ = targets_from_options("4090,ddr5-6400 2ch", None, None)     # a GPU plus the host it sits in
    assert [t.kind for t in both] == ["gpu", "cpu"] and both[1].bandwidth_gbs == 102.4
    with pytest.raises(InputError):
        targets_from_options("ddr5-6400 2ch,ddr4-3200 2ch", None, None)


def test_unified_memory_plan_has_a_verdict():
    from runlocal.plan import make_plan
    from runlocal.runtimes import Settings

    targets, _ = targets_from_options("m2 max", None, None)
    plan = make_plan(lookup("llama-3.1-8b"), Settings(ctx=8192), targets, with_fixes=False)
    assert plan.verdict in ("fits", "tight")


# ---------------------------------------------------------------- CLI and API

def test_cli_best_json_shape():
    r = run("best", "llama-3.1-8b", "--ctx", "4096", "--budget", "400", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"model", "runtime", "ctx", "budget_usd", "price_basis", "ranked", "unpriced", "over_budget",
            "notes"} <= doc.keys()
    assert doc["ctx"] == 4096 and doc["ranked"]
    row = doc["ranked"][0]
    assert {"rank", "device", "count", "spec", "quant", "decode_tokens_per_s", "price_usd", "tokens_per_s_per_1000_usd",
            "command", "verdict"} <= row.keys()
    assert all(x["price_usd"] <= 400 for x in doc["ranked"])


def test_cli_other_commands_json():
    r = run("compare", "4090", "3090", "--model", "llama-3.1-8b", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["id"] for x in rows] == ["rtx-4090", "rtx-3090"] and "decode_tokens_per_s" in rows[0]
    r = run("models", "--fits", "--gpu", "4090", "--ctx", "8k", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ctx"] == 8192 and doc["models"][0]["rank"] == 1
    r = run("cost", "llama-3.1-8b", "--gpu", "4090", "--hours-per-day", "4", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["assumptions"]["hours_per_day"] == 4 and doc["own"]["per_year_usd"] > 0
    r = run("models", "--json")               # the plain catalog list is unchanged
    assert r.returncode == 0 and "alias" in json.loads(r.stdout)[0]


@pytest.mark.parametrize("args", [
    ("cost", "llama-3.1-8b", "--gpu", "rtx 9999 ultra"),
    ("compare", "4090", "rtx 9999 ultra"),
    ("models", "--fits", "--gpu", "rtx 9999 ultra"),
    ("best", "no-such-model-xyz"),
    ("best", "llama-3.1-8b", "--runtime", "nope"),
    ("cost", "llama-3.1-8b", "--gpu", "4090", "--hours-per-day", "30"),
])
def test_cli_bad_input_exits_2_without_traceback(args):
    r = run(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.startswith("error:")
    if "rtx 9999 ultra" in args:
        assert "did you mean" in r.stderr


def test_api_best_matches_the_cli(tmp_path):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    app = create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", cors_origins=[])
    with TestClient(app) as c:
        r = c.get("/api/v1/best", params={"model": "llama-3.1-8b", "ctx": 4096, "budget": 400})
        assert r.status_code == 200, r.text
        cli = run("best", "llama-3.1-8b", "--ctx", "4096", "--budget", "400", "--json")
        assert r.json() == json.loads(cli.stdout)
        bad = c.get("/api/v1/best", params={"model": "llama-3.1-8b", "runtime": "nope"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "runtime"]
        assert c.get("/api/v1/best", params={"model": "llama-3.1-8b", "ctx": -1}).status_code == 422   # 0: -c 0, the trained
        cmp = c.get("/api/v1/compare", params={"devices": "4090,2x3090", "model": "llama-3.1-8b"})
        assert cmp.status_code == 200 and [x["count"] for x in cmp.json()] == [1, 2]
        unknown = c.get("/api/v1/compare", params={"devices": "rtx 9999 ultra"})
        assert unknown.status_code == 422 and "did you mean" in unknown.json()["detail"][0]["msg"]
