"""The rent table holds one kind of product (review21 #4): a GPU pod or instance rented by the hour, on demand. RunPod's
serverless flex-worker rate (per second of a scale-to-zero worker) had priced the RTX 3090 at $0.684/h, twice a 4090
pod ($0.34), so a used 3090 pair "paid off above 2.2 h/day".

Session 21 then priced the RTX 3090, L4 and L40 from a column deploybase's transcription heads "Spot/hr" (its figures
equalled silybench's on-demand rows where both list a GPU). mends22 replaced those rows with RunPod's own public
`gpuTypes` answer, captured on 2026-08-27 (Buckeyes22/pitwall, docs/research/2026-08-27-serve-model/engineering/
runpod--gputypes-live.json at 66827178): per GPU type the flags `communityCloud` / `secureCloud` (whether the lane is
offered) and `communityPrice` / `securePrice` (on-demand dollars per GPU-hour; the spot prices are other fields).
Transcribed here by hand, as (communityCloud, communityPrice, secureCloud, securePrice):"""

from __future__ import annotations

import re

import pytest

from runlocal.choose import cloud_prices, rent_offers

CAPTURE = {
    "rtx-3070": (True, 0.13, False, 0), "rtx-3080": (True, 0.17, False, 0), "rtx-3080-ti": (True, 0.18, False, 0),
    "rtx-3090": (True, 0.22, True, 0.5), "rtx-3090-ti": (True, 0.27, False, 0.46),
    "rtx-4070-ti": (True, 0.19, False, 0.5), "rtx-4080": (True, 0.27, False, 0.5), "rtx-4090": (True, 0.34, True, 0.74),
    "rtx-5080": (True, 0.39, False, 0.59), "rtx-5090": (True, 0.69, True, 0.99),
    "rtx-a4000": (True, 0.17, True, 0.25), "rtx-a5000": (True, 0.16, True, 0.27), "rtx-a6000": (True, 0.33, True, 0.53),
    "rtx-4000-ada": (True, 0.2, True, 0.28), "rtx-5000-ada": (True, 0.49, False, 0.83),
    "rtx-6000-ada": (True, 0.74, True, 0.84), "a40": (False, 0.35, True, 0.44), "l4": (False, 0.44, True, 0.49),
    "l40": (True, 0.69, True, 0.82), "l40s": (True, 0.79, True, 0.99),
    "rtx-pro-6000": (True, 1.69, True, 1.89),      # "RTX PRO 6000 Blackwell Workstation Edition", the catalog's card
    "v100-pcie-16gb": (True, 0.19, False, 0), "v100-sxm2-16gb": (True, 0.23, False, 0),
    "a100-sxm-40gb": (True, 1.0, False, 0), "a100-sxm-80gb": (True, 1.39, True, 1.59),
    "a100-pcie-80gb": (True, 1.19, True, 1.39), "h100-sxm": (True, 2.69, True, 3.29), "h100-pcie": (True, 1.99, True, 2.89),
    "h100-nvl": (True, 2.59, True, 3.19), "h200-sxm": (True, 3.59, True, 4.59),
    "h200-nvl": (False, 0.5, True, 3.79), "b200": (True, 5.98, True, 6.79),
    "mi300x": (False, 0.5, True, 2.39),
}


def _rows(via: str | None = None) -> list[dict]:
    return [r for r in cloud_prices()["prices"] if via is None or r["via"] == via]


def test_every_row_is_an_hourly_on_demand_instance_with_a_dated_page():
    table = cloud_prices()
    for row in table["prices"]:
        text = f"{row['provider']} {row.get('note', '')}".lower()
        assert "serverless" not in text and "per second" not in text and "spot" not in row["provider"].lower(), row
        assert row["url"].startswith("https://") and row["via"] in table["sources"], row
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["price_date"] or ""), row       # no undated price
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["read_on"]), row
        assert "column" not in row, row         # no price read from a column its page heads otherwise (Spot/hr)


def test_the_runpod_rows_are_the_capture_s_offered_lanes():
    rows = _rows("runpod-gputypes")
    assert rows and all(r["price_date"] == "2026-08-27" for r in rows)
    for r in rows:
        community, c_price, secure, s_price = CAPTURE[r["device"]]
        lane = r["provider"].removeprefix("RunPod ").removesuffix(" Cloud")
        offered, price = (community, c_price) if lane == "Community" else (secure, s_price)
        assert lane in ("Community", "Secure") and offered and r["usd_per_gpu_hour"] == price, r


def test_a_lane_runpod_does_not_offer_has_no_row():
    """The L4 has no Community Cloud lane (communityCloud false): the 0.44 the capture carries in communityPrice,
    the figure the Spot/hr column printed, is not a price anyone can rent at. The L4 rents as a Secure Cloud pod."""
    l4 = rent_offers("l4")
    assert [(o["provider"], o["usd_per_gpu_hour"]) for o in l4] == [("RunPod Secure Cloud", 0.49)]
    for r in _rows():
        if r["provider"].startswith("RunPod ") and r["device"] in CAPTURE:
            community, _, secure, _ = CAPTURE[r["device"]]
            assert community if "Community" in r["provider"] else secure, r


def test_the_capture_is_the_product_silybench_calls_on_demand():
    """The same product kind: for every GPU silybench's dated on-demand rows (2026-09-25) list in RunPod's Community
    Cloud, the capture's communityPrice is the same to the cent (9 GPUs)."""
    silybench = {r["device"]: r["usd_per_gpu_hour"] for r in _rows("silybench")
                 if r["provider"] == "RunPod Community Cloud"}
    assert len(silybench) == 9
    assert all(CAPTURE[d][1] == usd for d, usd in silybench.items())


@pytest.mark.parametrize("device, usd", [("rtx-3090", 0.22), ("l40", 0.69), ("rtx-a6000", 0.33), ("rtx-5080", 0.39)])
def test_the_cheapest_pod_of_one_gpu(device, usd):
    cheapest = rent_offers(device)[0]
    assert (cheapest["provider"], cheapest["usd_per_gpu_hour"]) == ("RunPod Community Cloud", usd)
    # the older, slower 3090 rents for less than the 4090, on the same page and tier
    assert rent_offers("rtx-3090")[0]["usd_per_gpu_hour"] < rent_offers("rtx-4090")[0]["usd_per_gpu_hour"]


@pytest.mark.parametrize("device, count", [("rtx-3090", 2), ("l4", 1), ("l40", 1)])
def test_cost_names_no_spot_headed_column_any_more(device, count):
    """review21b #7 had `cost` say the three rows came from a column headed Spot/hr; read from RunPod's own on-demand
    field now, the rent price carries no such note."""
    from runlocal.choose import cost
    from runlocal.hardware.catalog import find_device
    from runlocal.model import catalog

    doc = cost(catalog.lookup("qwen3-8b"), find_device(device), count)
    assert doc["rent"]["usd_per_gpu_hour"] == min(p for lane, p in ((0, CAPTURE[device][1]), (1, CAPTURE[device][3]))
                                                  if CAPTURE[device][0 if lane == 0 else 2])
    assert not any(n.startswith("rent price:") for n in doc["notes"])
