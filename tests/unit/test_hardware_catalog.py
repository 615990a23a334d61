"""The hardware catalog: data integrity of devices.json, loose-name matching, device specs."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from runlocal.hardware.catalog import (
    DEFAULT_UNIFIED_SHARE,
    Device,
    UnknownDeviceError,
    find_device,
    load_devices,
    load_sources,
    normalize_name,
    parse_device_spec,
)

GiB = 1024**3
DEVICES = load_devices()
BY_ID = {d.id: d for d in DEVICES}
APPLE = [d for d in DEVICES if d.kind == "apple"]


# ---------------------------------------------------------------- data integrity

def test_catalog_is_broad():
    # The planner is only useful if the hardware people own is in it.
    assert len(DEVICES) >= 120


@pytest.mark.parametrize("query, vendor", [
    ("3060 12gb", "nvidia"), ("3090", "nvidia"), ("3090 ti", "nvidia"), ("4060 ti 16gb", "nvidia"),
    ("4070", "nvidia"), ("4070 ti super", "nvidia"), ("4080 super", "nvidia"), ("4090", "nvidia"),
    ("5060 ti 16gb", "nvidia"), ("5070", "nvidia"), ("5070 ti", "nvidia"), ("5080", "nvidia"), ("5090", "nvidia"),
    ("2080 ti", "nvidia"), ("a4000", "nvidia"), ("a5000", "nvidia"), ("a6000", "nvidia"),
    ("rtx 6000 ada", "nvidia"), ("rtx pro 6000", "nvidia"), ("t4", "nvidia"), ("v100 16gb", "nvidia"),
    ("v100 32gb", "nvidia"), ("a10", "nvidia"), ("a10g", "nvidia"), ("l4", "nvidia"), ("l40s", "nvidia"),
    ("a100 pcie 40gb", "nvidia"), ("a100 sxm 40gb", "nvidia"), ("a100 pcie 80gb", "nvidia"),
    ("a100 sxm 80gb", "nvidia"), ("h100 pcie", "nvidia"), ("h100 sxm", "nvidia"), ("h100 nvl", "nvidia"),
    ("h200", "nvidia"), ("gh200", "nvidia"), ("b200", "nvidia"), ("dgx spark", "nvidia"),
    ("rx 6800", "amd"), ("rx 6900 xt", "amd"), ("7600 xt", "amd"), ("7800 xt", "amd"), ("7900 xt", "amd"),
    ("7900 xtx", "amd"), ("7900 gre", "amd"), ("9070", "amd"), ("9070 xt", "amd"), ("w7900", "amd"),
    ("mi210", "amd"), ("mi250x", "amd"), ("mi300x", "amd"), ("mi325x", "amd"),
    ("strix halo 64gb", "amd"), ("strix halo 128gb", "amd"),
    ("a770 16gb", "intel"), ("a750", "intel"), ("b580", "intel"), ("b570", "intel"),
    ("m1 ultra 128gb", "apple"), ("m2 pro 32gb", "apple"), ("m3 pro 36gb", "apple"), ("m4 pro 48gb", "apple"),
])
def test_required_products_are_present(query, vendor):
    # Each product the catalog promises to cover resolves, to a device of the right vendor.
    assert find_device(query).vendor == vendor


def test_ids_are_unique():
    # Ids are the stable keys the web UI and API select by.
    ids = [d.id for d in DEVICES]
    assert len(ids) == len(set(ids))


def test_every_device_cites_a_resolvable_source():
    # Every figure must be traceable: a source id from the table or a URL.
    sources = load_sources()
    assert all(url.startswith("https://") for url in sources.values())
    for d in DEVICES:
        for ref in filter(None, (d.source, d.share_source)):
            assert ref in sources or ref.startswith("https://"), (d.id, ref)
        assert d.source, d.id


def test_no_name_or_alias_maps_to_two_devices():
    # A name meaning two devices would make find_device depend on catalog order.
    owners = defaultdict(set)
    for d in DEVICES:
        for text in (d.id, d.name, *d.aliases):
            owners[normalize_name(text)].add(d.id)
    clashes = {k: v for k, v in owners.items() if len(v) > 1}
    assert not clashes


def test_every_id_name_and_alias_resolves_to_its_own_device():
    # Whatever the catalog shows a user (id, full name, alias) must round-trip through find_device.
    for d in DEVICES:
        for text in (d.id, d.name, *d.aliases):
            assert find_device(text) is d, (text, d.id)


def test_memory_and_bandwidth_are_positive():
    # Zero or negative sizes would divide by zero in the speed model or fit nothing.
    for d in DEVICES:
        assert d.memory_bytes > 0 and d.bandwidth_gbs > 0, d.id


def test_memory_gib_converts_to_exact_binary_bytes():
    # "24 GB" of GDDR is 24 GiB; a decimal conversion would under-count 1.6 GiB of a 4090.
    assert find_device("4090").memory_bytes == 24 * GiB
    assert all(d.memory_bytes % 2**20 == 0 for d in DEVICES)


def test_bandwidth_agrees_with_bus_width_and_data_rate():
    # Bus width x data rate is the definition of peak bandwidth: catches typos in either column.
    # Apple quotes a rounded-down figure (400 GB/s for 409.6), hence the 3% tolerance.
    checked = 0
    for d in DEVICES:
        if d.bus_width_bits and d.memory_mts:
            derived = d.bus_width_bits / 8 * d.memory_mts / 1000
            assert d.bandwidth_gbs == pytest.approx(derived, rel=0.03), d.id
            checked += 1
    assert checked >= 100


def test_cpu_bandwidth_is_channels_x_8_bytes_x_mts():
    # The CPU entries are computed, so they must agree exactly: channels x 8 bytes x MT/s.
    cpus = [d for d in DEVICES if d.kind == "cpu"]
    for d in cpus:
        assert d.memory_channels and d.memory_mts, d.id
        assert d.bandwidth_gbs == pytest.approx(d.memory_channels * 8 * d.memory_mts / 1000, abs=1e-9), d.id


@pytest.mark.parametrize("gen, mts, channels", [
    ("ddr4", 3200, (2, 4, 8)),
    ("ddr5", 4800, (2, 4, 8, 12)),
    ("ddr5", 5600, (2, 4, 8, 12)),
    ("ddr5", 6400, (2, 4, 8, 12)),
])
def test_cpu_configurations_are_covered(gen, mts, channels):
    # Desktop (2), HEDT (4) and server (8, 12 channel) memory systems each get an entry for CPU-only runs.
    for ch in channels:
        d = find_device(f"{gen}-{mts} {ch}-channel")
        assert (d.kind, d.memory_channels, d.memory_mts) == ("cpu", ch, mts)


def test_int8_and_fp8_are_never_slower_than_fp16():
    # On every matrix unit here the 8-bit rate is at least the 16-bit rate: catches swapped columns.
    for d in DEVICES:
        for eight in (d.int8_tops, d.fp8_tflops):
            if eight is not None and d.fp16_tflops is not None:
                assert eight >= d.fp16_tflops, d.id


@pytest.mark.parametrize("query, ai_tops", [
    ("5090", 3352), ("5080", 1801), ("5070 ti", 1406), ("5070", 988), ("5060 ti 16gb", 759), ("5060", 614),
])
def test_blackwell_geforce_tensor_figures_match_nvidia_ai_tops(query, ai_tops):
    # Our computed FP8 (FP32 accumulate) x 8 must reproduce NVIDIA's independently published
    # "AI TOPS" (FP4, sparse) for each card: validates the SM x clock x rate derivation.
    assert find_device(query).fp8_tflops * 8 == pytest.approx(ai_tops, rel=0.005)


def test_kind_and_unified_memory_agree():
    # targets.py plans on unified_memory; kind is what the UI shows: they must not contradict.
    for d in DEVICES:
        assert d.kind in ("gpu", "apple", "unified", "cpu"), d.id
        assert d.unified_memory == (d.kind in ("apple", "unified")), d.id
        if d.unified_memory:
            assert d.pcie is None, d.id
        if d.vendor == "nvidia" and d.kind == "gpu":
            assert d.compute_capability, d.id


def test_devices_serialize_to_json():
    # The API returns dataclasses.asdict(device) as JSON.
    json.dumps([dataclasses.asdict(d) for d in DEVICES])


# ---------------------------------------------------------------- unified memory

def test_apple_share_follows_working_set_rule():
    # macOS (before 26) lets Metal use 2/3 of RAM below 36 GB and 3/4 from 36 GB (recommendedMaxWorkingSetSize,
    # measurements/apple_working_set/); macOS 26 gives more, so these are floors there.
    assert APPLE
    for d in APPLE:
        expected = 2 / 3 if d.memory_bytes < 36 * GiB else 3 / 4
        assert d.gpu_memory_share == pytest.approx(expected), d.id


@pytest.mark.parametrize("query, observed_mib", [
    ("m1 pro 16gb", 10922.67),   # llama-cpp-python#687: recommendedMaxWorkingSetSize = 10922.67 MB
    ("m2 max 32gb", 21845.34),   # ollama#434 on an M2 Max 32 GB
    ("m4 max 36gb", 27648.00),   # ltsaprounis/ai-chess-coach: M4 Max 36 GB, macOS 15.7.7, 28991.03 MB = 27648 MiB
    ("m2 max 64gb", 49152.00),   # llama.cpp#1870 on a 64 GB machine
    ("m2 max 96gb", 73728.00),   # llama.cpp#3213 on an M2 Max 96 GB
])
def test_apple_gpu_usable_bytes_match_observed_working_set(query, observed_mib):
    # The capacity we plan with equals what ggml's Metal backend printed on real machines.
    assert find_device(query).gpu_usable_bytes / 2**20 == pytest.approx(observed_mib, abs=0.01)


def test_apple_has_one_entry_per_memory_size():
    # Fit depends on RAM, so each chip needs every configuration Apple sold, none twice.
    sizes = defaultdict(list)
    for d in APPLE:
        sizes[d.family].append(d.memory_bytes)
    assert len(sizes) >= 16
    # a family whose source names only its largest configuration (M5 Pro / Max, review21 #8) says so in its entry
    named_largest = {d.family for d in APPLE if "the source read names only the largest" in (d.notes or "")}
    for fam, s in sizes.items():
        assert len(s) == len(set(s)) and (len(s) >= 2 or fam in named_largest), fam


@pytest.mark.parametrize("family, low_bin_sizes, low_bw, high_bw", [
    ("m3-max", (36, 96), 300, 400),   # 14-core CPU bin has a 384-bit bus
    ("m4-max", (36,), 410, 546),      # 14-core CPU bin has a 384-bit bus
])
def test_binned_max_chips_have_the_lower_bandwidth(family, low_bin_sizes, low_bw, high_bw):
    # The memory size decides the bin and the bin decides bandwidth: an easy mistake to copy across.
    for d in (d for d in APPLE if d.family == family):
        expected = low_bw if round(d.memory_gib) in low_bin_sizes else high_bw
        assert d.bandwidth_gbs == expected, d.id


def test_bare_apple_chip_name_means_its_smallest_configuration():
    # Documented rule: a chip name without a size plans on the base model (the conservative fit).
    for fam in {d.family for d in APPLE}:
        smallest = min((d for d in APPLE if d.family == fam), key=lambda d: d.memory_bytes)
        assert find_device(fam.replace("-", " ")) is smallest, fam


def test_unified_usable_bytes_is_a_share_and_discrete_is_everything():
    # Unified systems keep RAM for the OS; a discrete card's VRAM is all the GPU's.
    for d in DEVICES:
        if d.unified_memory:
            assert 0 < d.gpu_usable_bytes < d.memory_bytes, d.id
        else:
            assert d.gpu_usable_bytes == d.memory_bytes, d.id


# torch's OOM lines as posted (the cited issue threads), "total capacity of X GiB": the figure CUDA reports on Linux
DEVICES_JSON = Path(__file__).parents[2] / "src/runlocal/data/devices.json"
POSTED_CUDA_TOTALS = {"rtx-4090": 23.64, "rtx-5090": 31.36, "rtx-3060-12gb": 11.75, "rtx-3080": 9.78,
                      "rtx-3070": 7.78, "rtx-4060": 7.63, "rtx-4060-ti-16gb": 15.55}


@pytest.mark.parametrize("device_id, posted_gib", sorted(POSTED_CUDA_TOTALS.items()))
def test_consumer_cards_carry_the_cuda_total_their_posted_oom_lines_print(device_id, posted_gib):
    d = BY_ID[device_id]
    assert d.cuda_total_bytes == int(posted_gib * GiB)
    assert d.cuda_total_source and d.cuda_total_source.startswith("https://github.com/")
    note = next(x for x in json.loads(DEVICES_JSON.read_text())["devices"] if x["id"] == device_id)["cuda_total_note"]
    assert f"{posted_gib} GiB" in note          # the quoted line carries the figure


def test_every_cuda_total_is_a_few_percent_under_the_marketed_size():
    # the driver keeps 1.5-5 % of a card (23.64 of 24 = 98.5 %, 7.63 of 8 = 95.4 %): a figure outside that band is a
    # Windows line (the marketed size) or another card's
    # a Tesla with ECC on (its default; the note says so) gives 1/16 of its GDDR5 to the check bits first (P40: 22.38
    # of 24 GiB, 24 x 15/16 = 22.5)
    notes = {x["id"]: x.get("cuda_total_note") or "" for x in json.loads(DEVICES_JSON.read_text())["devices"]}
    for d in DEVICES:
        if d.cuda_total_bytes:
            share = 15 / 16 if "ECC on" in notes[d.id] else 1.0
            # an HBM card's driver keeps less: the H200 read 139.80 of its marketed 141 (99.15 %, torch.cuda.mem_get_info
            # on the lent H200, session 18), the H100 79.18 of 80 (98.98 %)
            top = 0.992 if d.memory_type and d.memory_type.startswith("HBM") else 0.99
            # a unified device's CUDA total is the RAM Linux sees, less the firmware carve-outs and the kernel's own:
            # 121.69 of 128 on a GB10 (95.1 %), 61.35 of 64 on an AGX Orin (95.9 %), 7.43 of 8 on an Orin Nano (92.9 %,
            # free -h there: 'total 7,4Gi')
            bottom = 0.90 if d.unified_memory else 0.95
            assert bottom * share * d.memory_bytes < d.cuda_total_bytes < min(top, share) * d.memory_bytes, d.id


def test_3090_and_4090_are_planned_at_about_the_same_usable_memory():
    # both are 24 GB cards; CUDA reports 23.58 and 23.64 GiB, so neither is planned at its marketed 24 GiB
    from runlocal.hardware.targets import targets_from_options
    caps = {}
    for gpu in ("rtx-3090", "rtx-4090"):
        targets, _ = targets_from_options(gpu, None, None)
        caps[gpu] = targets[0].capacity
    assert abs(caps["rtx-3090"] - caps["rtx-4090"]) < 0.1 * GiB
    assert max(caps.values()) < 24 * GiB


def test_unified_share_defaults_when_unknown():
    # A unified entry without a share falls back to the documented default instead of 100%.
    d = dataclasses.replace(find_device("dgx spark"), gpu_memory_share=None)
    assert d.gpu_usable_bytes == int(d.memory_bytes * DEFAULT_UNIFIED_SHARE)


def test_strix_halo_uses_linux_gtt_default():
    # On Linux the iGPU allocates from GTT, half of RAM by default: 64 of 128 GB, not all of it.
    assert find_device("strix halo 128gb").gpu_usable_bytes == 64 * GiB


# ---------------------------------------------------------------- loose names

@pytest.mark.parametrize("query, expected", [
    ("4090", "rtx-4090"),                          # bare model number
    ("rtx 4090", "rtx-4090"),                      # series prefix with a space
    ("RTX-4090 24GB", "rtx-4090"),                 # dashes, case, a memory size that matches
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),       # the marketing name, vendor words stripped
    ("h100", "h100-sxm"),                          # family name → most common variant (SXM 80GB)
    ("a100", "a100-sxm-80gb"),                     # family name → most common variant (SXM 80GB)
    ("a100 80gb", "a100-sxm-80gb"),                # size narrows to two 80 GB parts; SXM preferred
    ("a100 40gb", "a100-sxm-40gb"),                # size picks the 40 GB variants; SXM preferred
    ("h100 94gb", "h100-nvl"),                     # size alone selects the NVL
    ("m3 max 64gb", "m3-max-64gb"),                # Apple chip + RAM
    ("Apple M4 Max 48GB", "m4-max-48gb"),          # Apple marketing name
    ("m4 pro 48", "m4-pro-48gb"),                  # size without a unit, by prefix
    ("m2 max", "m2-max-32gb"),                     # bare chip → base configuration (documented rule)
    ("4060 ti", "rtx-4060-ti-8gb"),                # two-size card without a size → the base 8 GB card
    ("rtx 4060 ti 16 GB", "rtx-4060-ti-16gb"),     # ... and with one
    ("a10g", "a10g"),                              # "10g" here is part of the name, not 10 GB
    ("a10 24gb", "a10"),                           # exact name wins over the A10G of the same size
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),         # nvidia-smi's name for the SXM part
    ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"),    # nvidia-smi's name
    ("Tesla V100-PCIE-32GB", "v100-pcie-32gb"),    # nvidia-smi's name, old "Tesla" branding
    ("AMD Radeon RX 7900 XTX", "rx-7900-xtx"),     # AMD marketing name
    ("AMD Instinct MI300X", "mi300x"),             # AMD marketing name
    ("AMD Ryzen AI Max+ 395 64GB", "ryzen-ai-max-395-64gb"),  # a "+" inside the name
    ("dgx spark", "dgx-spark"),                   # unified-memory box by product name
    ("ddr5-6400 12-channel", "cpu-ddr5-6400-12ch"),  # CPU-only memory system
])
def test_loose_names_resolve(query, expected):
    assert find_device(query).id == expected


def test_unknown_name_raises_with_suggestions():
    # A typo must fail loudly and point at the likely device.
    with pytest.raises(UnknownDeviceError) as exc:
        find_device("4099")
    err = exc.value
    assert isinstance(err, ValueError)
    assert err.query == "4099"
    assert err.suggestions[0] == "rtx-4090" and len(err.suggestions) <= 5
    assert "did you mean" in str(err) and "rtx-4090" in str(err)


def test_memory_size_that_no_variant_has_is_unknown():
    # "4090 48gb" must not silently plan on the 24 GB card.
    with pytest.raises(UnknownDeviceError) as exc:
        find_device("4090 48gb")
    assert "rtx-4090" in exc.value.suggestions


def test_match_across_families_is_ambiguous():
    # "40" could be any RTX 40 card: refuse and list candidates rather than guess.
    with pytest.raises(UnknownDeviceError) as exc:
        find_device("40")
    assert {"rtx-4060", "rtx-4070"} <= set(exc.value.suggestions)


@pytest.mark.parametrize("name, ada", [("rtx 5000", "rtx-5000-ada"), ("rtx 4000", "rtx-4000-ada"),
                                       ("RTX-4000", "rtx-4000-ada"), ("6000", "rtx-6000-ada")])
def test_a_workstation_number_without_its_generation_is_ambiguous(name, ada):
    """An owner of the Turing Quadro RTX 5000 (16 GB, 2018) types `--gpu "rtx 5000"`; the catalog's only RTX 5000 is
    the 32 GB Ada card, so planning on it would promise twice the memory. The CLI refuses in one line naming the
    candidates, and the name with its generation word still resolves."""
    out = subprocess.run([sys.executable, "-m", "runlocal.cli", "check", "llama-3-8b", "--gpu", name],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines() + out.stdout.strip().splitlines()
    assert len(lines) == 1 and ada in lines[0] and "Traceback" not in out.stderr
    assert find_device(f"{name} ada").id == ada and find_device(ada).id == ada


def test_laptop_variant_is_not_mistaken_for_the_desktop_card():
    # The 4090 Laptop GPU has 16 GB: matching it to the 24 GB desktop card would over-promise. nvidia-smi's
    # name for it finds its own entry; the bare number still means the desktop card.
    laptop = find_device("NVIDIA GeForce RTX 4090 Laptop GPU")
    assert laptop.id == "rtx-4090-laptop" and laptop.memory_bytes == 16 * GiB
    assert find_device("4090").id == "rtx-4090" and find_device("5090 laptop").memory_bytes == 24 * GiB


@pytest.mark.parametrize("query", ["", "   ", "nvidia"])
def test_empty_query_is_unknown(query):
    # Nothing (or only a vendor word) names no device.
    with pytest.raises(UnknownDeviceError):
        find_device(query)


# ---------------------------------------------------------------- device specs

@pytest.mark.parametrize("spec, expected", [
    ("2x3090", ["rtx-3090"] * 2),                        # count prefix, no spaces
    ("4 x h100", ["h100-sxm"] * 4),                      # count prefix with spaces
    ("3090,4090", ["rtx-3090", "rtx-4090"]),             # comma list (what the web UI sends)
    ("3090+4090", ["rtx-3090", "rtx-4090"]),             # plus list
    ("rtx 4090 x2", ["rtx-4090"] * 2),                   # count suffix
    ("2x3090+4090", ["rtx-3090", "rtx-3090", "rtx-4090"]),  # count inside a plus list
    ("2x ryzen ai max+ 395", ["ryzen-ai-max-395-128gb"] * 2),  # "+" in the name is not a separator
    ("rx 7900 xtx", ["rx-7900-xtx"]),                    # "7900 x..." is a name, not 7900 devices
    ("rtx-4090, m2-max-64gb", ["rtx-4090", "m2-max-64gb"]),  # ids, with spaces after the comma
])
def test_parse_device_spec(spec, expected):
    assert [d.id for d in parse_device_spec(spec)] == expected


@pytest.mark.parametrize("spec", ["0x3090", "100x h100", "", "3090,,4090"])
def test_parse_device_spec_rejects_bad_counts_and_empty_items(spec):
    # Zero or absurd counts and empty list items are input errors, not devices.
    with pytest.raises(ValueError):
        parse_device_spec(spec)


def test_parse_device_spec_unknown_item_names_it():
    # The error names the item that failed, so a long list is easy to fix.
    with pytest.raises(UnknownDeviceError) as exc:
        parse_device_spec("3090,4099")
    assert exc.value.query == "4099"


# ---------------------------------------------------------------- module hygiene

def test_import_reads_no_data():
    # The CLI imports the catalog on every run; the JSON must load only when asked for.
    code = ("import sys, runlocal.hardware.catalog as c; "
            "assert c._catalog.cache_info().currsize == 0; "
            "c.load_devices(); assert c._catalog.cache_info().currsize == 1")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_device_is_frozen():
    # Devices are shared from a cache: mutation would leak into every later lookup.
    with pytest.raises(dataclasses.FrozenInstanceError):
        find_device("4090").memory_bytes = 1  # type: ignore[misc]


def test_load_devices_returns_a_copy():
    # Callers may sort or filter the list without changing the cached catalog.
    first = load_devices()
    first.clear()
    assert len(load_devices()) == len(DEVICES)
    assert isinstance(DEVICES[0], Device)
