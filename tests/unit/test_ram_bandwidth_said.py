"""review19 #10: the decode of a GPU plan with weights in system RAM times them at an assumed RAM bandwidth (89.6 GB/s,
verdict.DEFAULT_RAM_BANDWIDTH_GBS), which was said only for CPU-only plans; and `--ram ddr4-3200` was refused with
"cannot read size" and no way named to give the memory's speed. Independent figures: JEDEC's DDR rate × 8 bytes ×
2 channels (DDR5-5600: 2 × 8 × 5,600 MT/s = 89.6 GB/s; DDR4-3200: 2 × 8 × 3,200 = 51.2 GB/s), and the CLI's answer
for the form the error names."""

from __future__ import annotations

import re

import pytest

from runlocal.check import CheckRequest, check
from runlocal.errors import InputError

DDR5_5600_2CH = 2 * 8 * 5600 / 1000      # GB/s
DDR4_3200_2CH = 2 * 8 * 3200 / 1000


def _note(notes):
    return next((n for n in notes if n.startswith("RAM bandwidth")), None)


@pytest.mark.parametrize("kw", [dict(model="gpt-oss-120b", gpu="rtx-4090", ctx=32768, ram="96G"),     # experts
                                dict(model="qwen3-8b", gpu="rtx-4060", ctx=32768, ram="32G")],       # layers
                         ids=["experts-in-ram", "layers-in-ram"])
def test_a_plan_reading_weights_from_ram_says_the_bandwidth_assumed(kw):
    plan, notes = check(CheckRequest(**kw, use_measurements=False))
    assert any(d.kind == "cpu" and d.weights > 1e9 for d in plan.allocation.devices)
    note = _note(notes)
    assert note and f"{DDR5_5600_2CH:g} GB/s" in note and "DDR5-5600" in note
    decode = next(st for st in plan.steps if st.label == "decode speed")
    assert f"× {DDR5_5600_2CH:g} GB/s)" in decode.formula          # the figure the note names is the one used
    # the form the note names: the memory as a device beside the GPU, read at its own bandwidth, slower
    # and with --ram (fixes19c, review19b #10): the memory named alone plans the catalog system's 32 GiB of RAM
    named, ram = re.search(r"--gpu (\S+) --ram (\S+?):", note).groups()
    assert ram == kw["ram"] and "32 GiB for ddr4-3200" in note
    slower, later = check(CheckRequest(**{**kw, "gpu": named, "ram": ram}, use_measurements=False))
    assert _note(later) is None
    host = [d.capacity for p in (plan, slower) for d in p.allocation.devices if d.kind == "cpu"]
    assert host[0] == host[1] == int(ram[:-1]) * 2**30
    alone, _ = check(CheckRequest(**{**kw, "gpu": named, "ram": None}, use_measurements=False))
    assert [d.capacity for d in alone.allocation.devices if d.kind == "cpu"] == [32 * 2**30]
    assert f"× {DDR4_3200_2CH:g} GB/s)" in next(st for st in slower.steps if st.label == "decode speed").formula
    assert slower.speed["decode_tokens_per_s"] < plan.speed["decode_tokens_per_s"]


def test_a_plan_all_on_the_gpu_has_no_such_note():
    plan, notes = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ctx=8192, use_measurements=False))
    assert _note(notes) is None


def test_ram_given_a_memory_type_names_the_accepted_form():
    with pytest.raises(InputError) as e:
        check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ram="ddr4-3200"))
    said = str(e.value)
    assert said.startswith("ram: ") and "--gpu rtx-4090,ddr4-3200 --ram 64G" in said
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090,ddr4-3200", ram="64G", use_measurements=False))
    host = next(d for d in plan.allocation.devices if d.kind == "cpu")
    assert host.capacity == 64 * 2**30 and "DDR4-3200" in host.name
