"""Laptop integrated GPUs (review20 finding 12, section 13's Jetson note): each shares the laptop's RAM, the GPU taking
the share its driver allows by default, and the memory bandwidth is the RAM's. Figures worked out here from the
sources the catalog cites:
- AMD Radeon 780M / 760M / 680M / 890M on Linux: GTT, which the kernel's TTM limits to half of RAM by default
  (drivers/gpu/drm/ttm/ttm_tt.c); Intel Iris Xe / Arc 140V: "Limited by OS to one-half of System Memory" (Intel's
  graphics-memory FAQ, article 000020962);
- a 128-bit bus at LPDDR5X-7500 moves 128 / 8 × 7500 MT/s = 120.0 GB/s (Ryzen 7 7840U's memory), at LPDDR4X-4266
  68.3 GB/s (Core i7-1165G7's)."""

from __future__ import annotations

import pytest

from runlocal.errors import UnknownDeviceError
from runlocal.hardware.catalog import find_device, variant_note
from runlocal.units import GiB


@pytest.mark.parametrize("name, device_id, ram_gib, gbs", [
    ("iris-xe", "iris-xe-16gb", 16, 128 / 8 * 4266 / 1000),
    ("radeon-780m", "radeon-780m-16gb", 16, 128 / 8 * 7500 / 1000),
    ("780m 32gb", "radeon-780m-32gb", 32, 120.0),
    ("radeon 890m", "radeon-890m-16gb", 16, 120.0),
    ("680m", "radeon-680m-16gb", 16, 128 / 8 * 6400 / 1000),
])
def test_the_gpu_gets_half_the_ram_and_the_rams_bandwidth(name, device_id, ram_gib, gbs):
    d = find_device(name)
    assert d.id == device_id
    assert d.memory_bytes == ram_gib * GiB
    assert d.gpu_usable_bytes == ram_gib * GiB // 2
    assert d.bandwidth_gbs == pytest.approx(gbs, abs=0.05)


def test_a_bare_name_says_which_ram_size_it_took():
    assert "it also comes with 32 GB" in variant_note("radeon-780m", find_device("radeon-780m"))


@pytest.mark.parametrize("name, vendor", [("iris-xe-99", "intel"), ("uhd-620", "intel"), ("intel-hd-graphics-620", "intel"),
                                          ("radeon-660m", "amd"), ("vega8", "amd")])
def test_an_integrated_name_suggests_integrated_gpus_of_its_vendor(name, vendor):
    with pytest.raises(UnknownDeviceError) as err:
        find_device(name)
    suggested = [find_device(s) for s in err.value.suggestions]
    assert suggested
    assert all(d.kind == "unified" and d.vendor == vendor for d in suggested)   # no Jetson, no discrete card


def test_a_bare_jetson_orin_nano_names_the_variant_it_took():
    # devices.json: the bare name is the Super clocks (JetPack 6.1+); the original 15 W mode and the 4 GB module exist
    note = variant_note("jetson-orin-nano", find_device("jetson-orin-nano"))
    assert note.startswith("'jetson-orin-nano' is taken as NVIDIA Jetson Orin Nano Super 8GB")
    assert "jetson-orin-nano-original-8gb" in note and "jetson-orin-nano-4gb" in note


@pytest.mark.parametrize("name", ["orin-nano-super", "jetson orin nano super"])
def test_a_name_saying_super_has_chosen_the_clocks(name):
    """NVIDIA's "Super boost" post (devices.json source jetson-orin-nano-super): Super is JetPack 6.1+'s clocks of the 8 GB
    Orin Nano, 68 → 102 GB/s. A name that says "super" already picked them, so no note asks which version it is (the
    catalog's original-clocks 8 GB and 4 GB modules are not Super parts); the bare name keeps its note (above)."""
    device = find_device(name)
    assert device.id == "jetson-orin-nano-super-8gb" and device.bandwidth_gbs == 102.0
    assert variant_note(name, device) is None


@pytest.mark.parametrize("name, vendor, first", [("rtx 3070m", "nvidia", "rtx-3070"), ("gtx 1650m", "nvidia", "gtx-1660"),
                                                 ("rtx a2000m", "nvidia", None), ("rx 6800m", "amd", "rx-6800")])
def test_a_discrete_laptop_card_suggests_discrete_cards(name, vendor, first):
    """review20b finding 7: the laptop GPUs of NVIDIA's RTX / GTX / RTX A and AMD's RX lines (the "M" parts: RTX 3070
    Laptop was sold as 3070M) are discrete cards with their own VRAM, so they are named close to the desktop card of
    the same number (as at 86643473), not as AMD's three-digit "NNNM" integrated Radeons."""
    with pytest.raises(UnknownDeviceError) as err:
        find_device(name)
    suggested = [find_device(s) for s in err.value.suggestions]
    assert suggested and all(d.kind != "unified" for d in suggested[:3])
    assert suggested[0].vendor == vendor
    if first:
        assert err.value.suggestions[0] == first


def test_the_assumed_fastest_ram_is_said_and_a_named_ram_is_planned():
    """review20b: an iGPU's bandwidth is the fastest memory its chip takes; the laptop maker may fit slower RAM. The
    spec pages (devices.json sources): Ryzen 7 7840U "DDR5-5600, LPDDR5x-7500"; Core i7-1165G7 "LPDDR4x-4266, DDR4-3200".
    By hand, a laptop's two 64-bit channels: DDR5-5600 2 × 8 B × 5600 MT/s = 89.6 GB/s; DDR4-3200 = 51.2 GB/s."""
    from runlocal.errors import InputError
    from runlocal.hardware.targets import targets_from_options

    targets, notes = targets_from_options("780m", None, None)
    assert targets[0].bandwidth_gbs == 128 / 8 * 7500 / 1000
    assert any("bandwidth assumed 120 GB/s, LPDDR5X-7500, the fastest memory the chip takes" in n
               and "DDR5-5600 89.6 GB/s" in n and "--gpu 780m,ddr5-5600" in n for n in notes)
    for spec in ("780m,ddr5-5600", "ddr5-5600,780m"):
        targets, notes = targets_from_options(spec, None, None)
        assert [t.bandwidth_gbs for t in targets] == [2 * 8 * 5600 / 1000] * 2      # the iGPU and the CPU side
        assert [t.kind for t in targets] == ["unified", "cpu"]
    targets, _ = targets_from_options("iris-xe,ddr4-3200", None, None)
    assert targets[0].bandwidth_gbs == 2 * 8 * 3200 / 1000
    with pytest.raises(InputError, match="takes LPDDR5X-7500 or DDR5-5600"):
        targets_from_options("780m,ddr4-3200", None, None)          # not a memory the 7840U takes
    assert not any("bandwidth assumed" in n for n in targets_from_options("arc-140v", None, None)[1])   # in package
