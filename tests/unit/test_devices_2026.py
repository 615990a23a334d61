"""Devices people name in 2026 (review21 #8), each checked against the figures its cited page gives, written out:
- Apple M5 Pro / M5 Max (press release of 2026-03-03 as lowyat.net and mikeshouts.com report it): M5 Pro up to 20 GPU
  cores, up to 64 GB, 307 GB/s; M5 Max up to 40 GPU cores, up to 128 GB, 614 GB/s. By hand: LPDDR5X at the M5's
  9,600 MT/s on 256 bits = 307.2 GB/s, on 512 bits = 614.4 GB/s.
- Radeon RX 9060 XT 16 GB (hothardware, 2025-06-04; tweaktown's report of AMD's briefing): 32 CUs, 20 Gbps GDDR6 on
  128 bits = 320 GB/s, 3.13 GHz boost, $349, 821 TOPS INT4 with sparsity = 4 × the dense INT8 rate.
- Ryzen AI Max 390 / 385 (svethardware.cz's report of AMD's CES 2025 announcement): Radeon 8050S, 32 CUs, the
  family's 256-bit LPDDR5X-8000 = 256 GB/s; the 8050S's clock up to 2,800 MHz (AMD's figure as cputronic.com quotes it;
  fpsbench.com's boost clock 2,800 MHz; mends22).
- ASUS Ascent GX10: the DGX Spark's GB10 system under ASUS's name (ai-muninn.com: "the NVIDIA DGX Spark (and its ASUS
  GX10 variant)")."""

from __future__ import annotations

import pytest

from runlocal.hardware.catalog import find_device, load_sources, search_devices

PAGES = {"m5-pro-64gb": (307, 64, 20), "m5-max-128gb": (614, 128, 40), "rx-9060-xt": (320, 16, None),
         "ryzen-ai-max-390-64gb": (256, 64, None), "ryzen-ai-max-385-64gb": (256, 64, None)}


@pytest.mark.parametrize("device_id", sorted(PAGES))
def test_each_new_device_matches_its_page(device_id):
    gbs, gib, cores = PAGES[device_id]
    dev = find_device(device_id)
    assert dev.bandwidth_gbs == gbs and dev.memory_gib == gib
    assert abs(dev.bus_width_bits / 8 * dev.memory_mts / 1000 - gbs) < 1      # bus × rate gives the page's figure
    assert cores is None or dev.gpu_cores == cores
    assert load_sources()[dev.source].startswith("https://")


def test_rx_9060_xt_matrix_rates_follow_amds_figures():
    dev = find_device("9060 xt")
    assert dev.id == "rx-9060-xt"
    assert dev.fp16_tflops == pytest.approx(32 * 1024 * 3.13 / 1000, abs=0.1)    # 102.6
    assert dev.int8_tops * 4 == pytest.approx(821, rel=0.01)                      # AMD: 821 TOPS INT4, sparse
    assert dev.launch_price_usd == 349


@pytest.mark.parametrize("name, device_id", [("m5 max", "m5-max-128gb"), ("M5 Pro", "m5-pro-64gb"),
                                             ("ryzen ai max 390", "ryzen-ai-max-390-64gb"),
                                             ("ryzen ai max 385", "ryzen-ai-max-385-64gb"),
                                             ("asus ascent gx10", "dgx-spark"), ("gx10", "dgx-spark")])
def test_the_names_people_type_resolve_and_are_found(name, device_id):
    assert find_device(name).id == device_id
    assert device_id in {d.id for d in search_devices(name)}


def test_the_8050s_is_priced_at_its_published_clock():
    """By hand: 32 CUs x 512 FLOPs a clock a CU (the RDNA 3.5 rate the 8060S entry uses: 40 x 2.9 GHz x 512 = 59.4)
    x 2.8 GHz = 45,875 GFLOPS = 45.9 TFLOPS. With a figure, a prompt is priced (it had no prefill speed)."""
    from runlocal.check import CheckRequest, check

    for device_id in ("ryzen-ai-max-390-64gb", "ryzen-ai-max-385-64gb"):
        dev = find_device(device_id)
        assert dev.fp16_tflops == dev.bf16_tflops == pytest.approx(32 * 512 * 2.8 / 1000, abs=0.05)
        assert "radeon-8050s-clock" in dev.notes and load_sources()["radeon-8050s-clock"].startswith("https://")
    per_cu_clock = find_device("ryzen-ai-max-395-64gb").fp16_tflops / (40 * 2.9)
    assert find_device("ryzen-ai-max-385-64gb").fp16_tflops / (32 * 2.8) == pytest.approx(per_cu_clock, rel=0.01)
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="ryzen ai max 385", ctx="8192"))
    assert plan.speed.get("prefill_tokens_per_s")
