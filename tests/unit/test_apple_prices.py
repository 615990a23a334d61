"""Apple entries carry Apple's announced starting prices (session 16's "noticed and left": no Apple device had a
price, so `best … -r mlx` ranked nothing priced), each at the cheapest Mac sold with that chip and memory (review18
#12: the four Pro entries had been priced at the 16-inch MacBook Pro, $600–1,100 above a Mac mini or 14-inch MacBook
Pro with the same chip and memory).

Independent sources, written out:
- Apple's newsroom announcements (the URL and date each entry cites) give each Mac's starting price, which is its base
  configuration's: Mac mini M1 $699 (2020-11-10); 14-inch MacBook Pro $1,999 with M1 Pro, 16-inch $2,499
  (2021-10-18); Mac mini $599 with M2 and $1,299 with M2 Pro (2023-01-17; the 16-inch MacBook Pro M2 Pro was
  $2,499); 14-inch MacBook Pro $1,599 with M3 and $1,999 with M3 Pro (2023-10-30; 16-inch $2,499); Mac mini $599
  with M4 and $1,399 with M4 Pro (2024-10-29; the 16-inch MacBook Pro M4 Pro, 2024-10-30, was $2,499); Mac Studio
  M4 Max $1,999 (2025-03-05); 14-inch MacBook Pro M5 $1,599 (2025-10-15); Mac Studio M3 Ultra $3,999 (2025-03-05,
  review21 #3; Macworld's report of that day, as english.worldmagazine.it/431260 copies it: "standard configuration
  ... M3 Ultra chip with a 28-core CPU ..., 60-core GPU, 96GB of unified memory (819GBps memory bandwidth) ... Priced
  at $3,999").
- The base configurations (Apple's tech-spec pages, support.apple.com/en-us/docs/mac): Mac mini M1 8-core GPU 8 GB;
  14-inch MacBook Pro M1 Pro 14-core GPU 16 GB; Mac mini M2 10-core GPU 8 GB; Mac mini M2 Pro 16-core GPU 16 GB;
  14-inch M3 10-core GPU 8 GB; 14-inch M3 Pro 14-core GPU 18 GB; Mac mini M4 10-core GPU 16 GB; Mac mini M4 Pro
  16-core GPU 24 GB; Mac Studio M4 Max 32-core GPU 36 GB; 14-inch M5 10-core GPU 16 GB. A chip's binned parts have
  its full memory bus (M1 Pro / M2 Pro 200 GB/s, M3 Pro 150, M4 Pro 273 in every configuration), so decode — the
  figure best ranks by per $1k — is the same; where the base configuration's GPU is binned below the bin an entry
  plans (its prefill), the configuration's text says so. The M1/M2 entries plan the full-GPU bin by its FP32 peak
  (Apple: M1 2.6 TFLOPS with 8 cores; 128 lanes × 2 FLOP × clock per core, so 5.2 for 16 cores, 3.6 for M2's 10 at
  1.4 GHz, 6.8 for M2 Pro's 19)."""

from __future__ import annotations

import re

import pytest

from runlocal.choose import best, device_price
from runlocal.hardware.catalog import find_device, load_devices
from runlocal.model.catalog import lookup

# id → (USD, announcement date, the base configuration's GPU cores, memory GB, the GPU bin the entry plans)
BASE = {"m1-8gb": (699, "2020-11-10", 8, 8, 8), "m1-pro-16gb": (1999, "2021-10-18", 14, 16, 16),
        "m2-8gb": (599, "2023-01-17", 10, 8, 10), "m2-pro-16gb": (1299, "2023-01-17", 16, 16, 19),
        "m3-8gb": (1599, "2023-10-30", 10, 8, 10), "m3-pro-18gb": (1999, "2023-10-30", 14, 18, 18),
        "m4-16gb": (599, "2024-10-29", 10, 16, 10), "m4-pro-24gb": (1399, "2024-10-29", 16, 24, 20),
        "m4-max-36gb": (1999, "2025-03-05", 32, 36, 32), "m5-16gb": (1599, "2025-10-15", 10, 16, 10),
        "m3-ultra-96gb": (3999, "2025-03-05", 60, 96, 80)}
# the 16-inch MacBook Pro's starting price, which the four Pro entries carried before (same newsroom pages)
SIXTEEN_INCH = {"m1-pro-16gb": 2499, "m2-pro-16gb": 2499, "m3-pro-18gb": 2499, "m4-pro-24gb": 2499}
FULL_BIN_TFLOPS = {8: 2.6, 16: 5.2, 10: 3.6, 19: 6.8}      # M1, M1 Pro, M2, M2 Pro full-GPU bins


@pytest.mark.parametrize("device_id", sorted(BASE))
def test_a_base_configuration_carries_its_announced_price(device_id):
    usd, date, cores, memory, planned = BASE[device_id]
    dev = find_device(device_id)
    price = device_price(dev)
    assert (price.usd, price.kind, price.as_of) == (usd, "launch", date)
    year, month = date.split("-")[:2]
    assert re.fullmatch(rf"https://www\.apple\.com/newsroom/{year}/{month}/[a-z0-9-]+/", price.source or "")
    # the configuration the price is for has the entry's memory; its GPU bin is named, and a bin below the one
    # the entry plans is said, with the memory bandwidth both share
    assert dev.memory_gib == memory and f" {memory} GB, " in (price.note or "")
    assert f"{cores}-core GPU" in (price.note or "") and "the whole computer" in (price.note or "")
    if cores < planned:
        assert f"{planned}-core GPU" in (price.note or "") and f"{dev.bandwidth_gbs:g} GB/s" in (price.note or "")
    bin_cores = getattr(dev, "gpu_cores", None)
    assert bin_cores == planned if bin_cores else dev.fp16_tflops == FULL_BIN_TFLOPS[planned]


@pytest.mark.parametrize("device_id", sorted(SIXTEEN_INCH))
def test_a_pro_chip_is_priced_below_the_16_inch_macbook_pro(device_id):
    """review18 #12: tok/s per $1k follows the price — decode / price × 1000 rises by 2,499 / price."""
    assert device_price(find_device(device_id)).usd == BASE[device_id][0] < SIXTEEN_INCH[device_id]


def test_other_apple_configurations_stay_unpriced_and_say_why():
    others = [d for d in load_devices() if d.vendor == "apple" and d.id not in BASE]
    assert len(others) >= 30
    for dev in others:
        price = device_price(dev)
        assert price.usd is None and "base configuration" in (price.note or "")


def test_best_on_mlx_ranks_priced_macs_by_tokens_per_dollar():
    res = best(lookup("llama-3.1-8b"), runtime="mlx", ctx=8192)
    assert res.ranked, "before: nothing priced"
    assert {r["device"] for r in res.ranked} <= set(BASE)
    for r in res.ranked:         # tok/s per 1000 USD, as the column says: decode / price × 1000
        assert r["tokens_per_s_per_1000_usd"] == pytest.approx(r["decode_tokens_per_s"] / BASE[r["device"]][0] * 1000,
                                                                abs=1e-3)
    assert any("whole computer" in n for n in res.notes)


def test_compare_dates_a_macs_price_by_its_announcement():
    from runlocal.compare import compare_devices

    mac, card = compare_devices(["m4-max-36gb", "rtx-4090"])
    assert (mac["launch_price_usd"], mac["launch_price_as_of"]) == (1999, "2025-03-05")   # the Mac Studio's, not 2024
    assert card["launch_price_as_of"] == str(card["launch_year"]) == "2022"


def test_the_best_page_says_a_macs_price_is_the_whole_computers(tmp_path):
    from fastapi.testclient import TestClient

    from runlocal.testing.browser import served_app

    app = served_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="x")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        page = client.get("/best", params={"model": "llama-3.1-8b", "runtime": "mlx"}).text
    assert "a Mac's: the whole computer" in page and "$599" in page          # the Mac mini M4 ranked, priced
