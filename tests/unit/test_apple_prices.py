"""Apple entries carry Apple's announced starting prices where the entry is a Mac's base configuration (session 16's
"noticed and left": no Apple device had a price, so `best … -r mlx` ranked nothing priced).

Independent sources, written out:
- Apple's newsroom announcements (the URL and date each entry cites) give each Mac's starting price, which is its base
  configuration's: Mac mini M1 $699 (2020-11-10), 16-inch MacBook Pro M1 Pro $2,499 (2021-10-18), Mac mini M2 $599
  and 16-inch MacBook Pro M2 Pro $2,499 (2023-01-17), 14-inch MacBook Pro M3 $1,599 and 16-inch M3 Pro $2,499
  (2023-10-30), Mac mini M4 $599 (2024-10-29), 16-inch MacBook Pro M4 Pro $2,499 (2024-10-30), Mac Studio M4 Max
  $1,999 (2025-03-05), 14-inch MacBook Pro M5 $1,599 (2025-10-15).
- The base configurations (Apple's tech-spec pages, support.apple.com/en-us/docs/mac): Mac mini M1 8-core GPU 8 GB;
  16-inch MacBook Pro M1 Pro 16-core GPU 16 GB; Mac mini M2 10-core GPU 8 GB; 16-inch M2 Pro 19-core GPU 16 GB;
  14-inch M3 10-core GPU 8 GB; 16-inch M3 Pro 18-core GPU 18 GB; Mac mini M4 10-core GPU 16 GB; 16-inch M4 Pro 20-core
  GPU 24 GB; Mac Studio M4 Max 32-core GPU 36 GB; 14-inch M5 10-core GPU 16 GB. A catalog entry plans one chip bin and
  memory size, so a price belongs to it only where both are the base configuration's; the M1/M2 entries plan the
  full-GPU bin by its FP32 peak (Apple: M1 2.6 TFLOPS with 8 cores; 128 lanes × 2 FLOP × clock per core, so 5.2 for
  16 cores, 3.6 for M2's 10 at 1.4 GHz, 6.8 for M2 Pro's 19)."""

from __future__ import annotations

import re

import pytest

from runlocal.choose import best, device_price
from runlocal.hardware.catalog import find_device, load_devices
from runlocal.model.catalog import lookup

# id → (USD, announcement date, GPU cores, memory GB) as the sources above give them
BASE = {"m1-8gb": (699, "2020-11-10", 8, 8), "m1-pro-16gb": (2499, "2021-10-18", 16, 16),
        "m2-8gb": (599, "2023-01-17", 10, 8), "m2-pro-16gb": (2499, "2023-01-17", 19, 16),
        "m3-8gb": (1599, "2023-10-30", 10, 8), "m3-pro-18gb": (2499, "2023-10-30", 18, 18),
        "m4-16gb": (599, "2024-10-29", 10, 16), "m4-pro-24gb": (2499, "2024-10-30", 20, 24),
        "m4-max-36gb": (1999, "2025-03-05", 32, 36), "m5-16gb": (1599, "2025-10-15", 10, 16)}
FULL_BIN_TFLOPS = {8: 2.6, 16: 5.2, 10: 3.6, 19: 6.8}      # M1, M1 Pro, M2, M2 Pro full-GPU bins


@pytest.mark.parametrize("device_id", sorted(BASE))
def test_a_base_configuration_carries_its_announced_price(device_id):
    usd, date, cores, memory = BASE[device_id]
    dev = find_device(device_id)
    price = device_price(dev)
    assert (price.usd, price.kind, price.as_of) == (usd, "launch", date)
    year, month = date.split("-")[:2]
    assert re.fullmatch(rf"https://www\.apple\.com/newsroom/{year}/{month}/[a-z0-9-]+/", price.source or "")
    # the configuration the price is for is the one the entry plans: its memory and its GPU bin
    assert dev.memory_gib == memory and f" {memory} GB, " in (price.note or "")
    assert f"{cores}-core GPU" in (price.note or "") and "the whole computer" in (price.note or "")
    bin_cores = getattr(dev, "gpu_cores", None)
    assert bin_cores == cores if bin_cores else dev.fp16_tflops == FULL_BIN_TFLOPS[cores]


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
