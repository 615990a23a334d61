"""One check of the device filters (shopping.one_of) behind `hardware --kind / --vendor` and `best --vendor / --form`:
the same message shape in every door — the field, the values it takes, the value as given — and one list of vendors,
the catalog's own (data/devices.json "vendor": nvidia, amd, intel, apple, and generic for the 15 CPU-only RAM
configurations "CPU, N-channel DDRx-…"), so `best --vendor generic` is accepted as `hardware --vendor generic` is."""

from __future__ import annotations

import pytest

from runlocal.errors import InputError
from runlocal.hardware.catalog import load_devices
from runlocal.hardware_list import hardware_records
from runlocal.shopping import VENDORS, best_for, one_of, shop_devices

EXPECTED_VENDORS = "nvidia, amd, intel, apple, generic"
EXPECTED_FORMS = "gpu, laptop, apple, unified, cpu"


def test_the_vendors_are_the_catalogs():
    assert set(VENDORS) == {d.vendor for d in load_devices()}
    assert ", ".join(VENDORS) == EXPECTED_VENDORS


@pytest.mark.parametrize("call, field, accepted", [
    (lambda v: hardware_records(vendor=v), "vendor", EXPECTED_VENDORS),
    (lambda v: shop_devices(vendor=v), "vendor", EXPECTED_VENDORS),
    # `best`'s door (CLI, API, MCP): best_for checks before it resolves the model, the value as typed (review23b: it
    # lower-cased first, so "Acme" came back as 'acme')
    (lambda v: best_for("llama-3.1-8b", vendor=v), "vendor", EXPECTED_VENDORS),
    (lambda v: best_for("llama-3.1-8b", form=v), "form", EXPECTED_FORMS),
    (lambda v: hardware_records(kind=v), "kind", EXPECTED_FORMS),
    (lambda v: shop_devices(form=v), "form", EXPECTED_FORMS),
])
def test_one_message_shape_naming_the_field_the_values_and_the_value_as_given(call, field, accepted):
    with pytest.raises(InputError) as e:
        call("  Acme ")
    assert str(e.value) == f"{field}: expected one of {accepted}, got 'Acme'"


def test_generic_is_the_cpu_ram_configurations_in_both_doors():
    """The catalog's generic devices are its CPU-only entries, kind cpu: 15 of them (3 DDR4-3200 channel counts, 4 each
    for DDR5-4800 / 5600 / 6400)."""
    listed = hardware_records(vendor="generic")
    ranked = shop_devices(vendor="GENERIC")
    assert len(listed) == len(ranked) == 3 + 3 * 4
    assert {r["id"] for r in listed} == {d.id for d in ranked}
    assert all(d.kind == "cpu" for d in ranked)
    assert {d.id for d in ranked} == {d.id for d in shop_devices(form="cpu")}


def test_blank_is_no_filter():
    assert one_of("vendor", None, VENDORS) is one_of("vendor", "  ", VENDORS) is None
    assert shop_devices(vendor="", form="") is None
    assert len(hardware_records(vendor="")) == len(load_devices())
