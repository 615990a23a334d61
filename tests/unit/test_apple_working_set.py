"""The catalog's Apple GPU shares against public logs of Metal's recommendedMaxWorkingSetSize
(measurements/apple_working_set/apple_working_set.jsonl: one record per report that states the Mac's RAM).

Each record's bytes are recomputed here from the value as printed and its unit (decided from the ggml-metal source
of the build's date, not from the value), so a unit slip in the data file shows up as a failure, not a fit."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from runlocal.hardware.catalog import load_devices, load_sources
from runlocal.hardware.unified_memory import apple_default_working_set

GiB = 1024**3
UNIT_BYTES = {"MB": 10**6, "MiB": 2**20, "GiB": 2**30, "GB": 10**9}
RECORDS_PATH = Path(__file__).resolve().parents[2] / "measurements" / "apple_working_set" / "apple_working_set.jsonl"
RECORDS = [json.loads(line) for line in RECORDS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
# Records a catalog share may rest on: the unit is known and the report has a URL the catalog can cite.
CITABLE = [r for r in RECORDS if r["unit_certain"] and r["source_url"]]
APPLE_BY_RAM: dict[int, list] = defaultdict(list)
for _d in load_devices():
    if _d.kind == "apple":
        APPLE_BY_RAM[round(_d.memory_bytes / GiB)].append(_d)


def printed_bytes(record: dict) -> float:
    number = record["value_printed"].lstrip("~").split()[0].replace(",", ".")
    return float(number) * UNIT_BYTES[record["unit"]]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: f"{r['ram_gb']}GB-{r['value_printed']}")
def test_record_bytes_and_share_follow_from_the_print(record):
    # bytes = value x unit, share = bytes / RAM (RAM as marketed is binary: 36 GB = 36 GiB)
    assert record["bytes"] == pytest.approx(printed_bytes(record), rel=1e-9)
    assert record["share"] == pytest.approx(record["bytes"] / (record["ram_gb"] * GiB), abs=5e-5)
    assert record["source_url"] or record["source_ref"]


def test_two_prints_of_one_share_agree_across_the_ggml_unit_switch():
    # 32 GB: 2023's "21845.34 MB" (MiB, /1024/1024) and 2/3 x 32 GiB in 2024's /1e6 unit are the same bytes,
    # written out by hand: 32 x 2^30 x 2/3 = 22906492245 B = 21845.33 MiB = 22906.49 MB.
    old = next(r for r in RECORDS if r["source_url"] == "https://github.com/ollama/ollama/issues/434")
    assert old["bytes"] == pytest.approx(22_906_492_245, abs=2 * 2**20 / 100)


@pytest.mark.parametrize("ram_gb", sorted({r["ram_gb"] for r in CITABLE if r["macos_era"] == "pre-26"}))
def test_catalog_share_equals_the_pre_macos26_measurement(ram_gb):
    # The catalog keeps the share measured before macOS 26 wherever one is measured: it holds on every macOS.
    measured = [r["share"] for r in CITABLE if r["ram_gb"] == ram_gb and r["macos_era"] == "pre-26"]
    assert APPLE_BY_RAM[ram_gb], f"no Apple device of {ram_gb} GB in the catalog"
    for device in APPLE_BY_RAM[ram_gb]:
        for share in measured:
            assert device.gpu_memory_share == pytest.approx(share, abs=1e-3), (device.id, share)
        # detection and MLX both read this one rule (unified_memory.apple_default_working_set)
        assert device.gpu_usable_bytes == apple_default_working_set(device.memory_bytes), device.id


@pytest.mark.parametrize("record", [r for r in RECORDS if r["unit_certain"]],
                         ids=lambda r: f"{r['ram_gb']}GB-{r['macos_era']}-{r['value_printed']}")
def test_no_report_is_below_the_catalog(record):
    # On any macOS (26 included, where the default is larger) the catalog's share is at most what a Mac of that
    # RAM reported: a plan that fits the catalog fits the machine.
    for device in APPLE_BY_RAM.get(record["ram_gb"], []):
        assert device.gpu_memory_share <= record["share"] + 1e-3, (device.id, record["share"])


def test_changed_shares_cite_a_measured_report():
    # The 36 GB devices rest on the M4 Max 36 GB report (macOS 15.7.7, 28991.03 MB = 27 GiB).
    urls = {r["source_url"] for r in CITABLE if r["ram_gb"] == 36}
    for device in APPLE_BY_RAM[36]:
        assert load_sources()[device.share_source] in urls, device.id
        assert device.gpu_usable_bytes == 27 * GiB, device.id
