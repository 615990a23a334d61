"""A size written with a CPU name is RAM, not a memory kind (review21 #9): "cpu-32gb" used to pick the one CPU entry
whose catalog size is 32 GiB (2-channel DDR4-3200, 51.2 GB/s) while `--gpu none` assumes 2-channel DDR5-5600, and
"cpu-16gb" / "cpu-64gb" were unknown. The bandwidths are computed here by hand from the JEDEC rates:
2 channels × 8 B × 5,600 MT/s = 89.6 GB/s; × 3,200 MT/s = 51.2 GB/s."""

from __future__ import annotations

import pytest

from runlocal.units import GiB

DDR5_5600_2CH = 2 * 8 * 5600 / 1000
DDR4_3200_2CH = 2 * 8 * 3200 / 1000


@pytest.mark.parametrize("name, gib, gbs", [
    ("cpu-16gb", 16, DDR5_5600_2CH), ("cpu-32gb", 32, DDR5_5600_2CH), ("cpu 64gb", 64, DDR5_5600_2CH),
    ("none-32gb", 32, DDR5_5600_2CH), ("ddr4-3200 64gb", 64, DDR4_3200_2CH), ("ddr5-5600 128gb", 128, DDR5_5600_2CH),
])
def test_a_size_sets_ram_and_keeps_the_memory_kind(name, gib, gbs):
    from runlocal.hardware.catalog import find_device

    dev = find_device(name)
    assert dev.kind == "cpu" and dev.memory_bytes == gib * GiB and dev.bandwidth_gbs == pytest.approx(gbs)


def test_cpu_32gb_plans_as_gpu_none_with_32g_of_ram():
    from runlocal.check import check
    from runlocal.hardware.targets import CPU_SIZE_RULE
    from runlocal.request import CheckRequest

    def plan(gpu, ram=None):
        return check(CheckRequest(model="llama-3.1-8b", gpu=gpu, ram=ram, ctx=8192, use_measurements=False))

    (sized, notes), (none, _) = plan("cpu-32gb"), plan("none", "32G")
    decode = sized.to_dict()["speed"]["decode_tokens_per_s"]
    assert decode == none.to_dict()["speed"]["decode_tokens_per_s"]
    assert sized.allocation.devices[0].capacity == none.allocation.devices[0].capacity == 32 * GiB
    assert any(CPU_SIZE_RULE in n for n in notes)
    # the named memory without a size keeps its catalog RAM and bandwidth: DDR4-3200 is slower by 51.2 / 89.6
    ddr4, _ = plan("cpu-ddr4-3200-2ch")
    assert ddr4.to_dict()["speed"]["decode_tokens_per_s"] < decode
