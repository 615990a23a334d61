"""The device catalog as the hardware doors list it: `runlocal hardware`, GET /api/v1/hardware and MCP's hardware tool
answer the same record per device (one schema, api/schemas.DeviceDoc).

A record is the catalog entry (hardware/catalog.Device, every field) with what a reader asks next beside it: the bytes
the GPU may allocate (a unified-memory system's default share of its RAM), the purchase price as `compare` and `cost`
price it (choose.device_price: the launch price with the year or announcement date it was set and its page), and the
cheapest dated on-demand rent for one GPU from data/cloud_prices.json (choose.rent_offers, as `cost` rents it).

Pure computation over the embedded catalogs: no I/O beyond reading them, nothing read at import time.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any


def device_record(dev) -> dict[str, Any]:
    """One catalog device as every hardware door answers it."""
    from .choose import cloud_prices, device_price, rent_offers
    from .shopping import form_factor

    price = device_price(dev)
    offers = rent_offers(dev.id, 1)
    rent = offers[0] if offers else None
    via = cloud_prices().get("sources", {})
    return {
        **{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(dev).items()},    # as JSON carries them
        "form_factor": form_factor(dev),      # what `kind` filters by: a laptop card is kind gpu, form laptop
        "gpu_usable_bytes": dev.gpu_usable_bytes,
        "price_usd": price.usd, "price_kind": price.kind, "price_source": price.source, "price_as_of": price.as_of,
        "price_note": price.note,
        # the used-market price where the catalog has one (measurements/used_prices/RULE.md), with its page and date
        **_used(dev),
        # the cheapest offer of one GPU, on demand, as `cost` rents it; None where no dated pod price page names it
        "rent_usd_per_gpu_hour": rent["usd_per_gpu_hour"] if rent else None,
        "rent_provider": rent["provider"] if rent else None,
        "rent_url": rent["url"] if rent else None,
        "rent_via": via.get(rent["via"], rent["via"]) if rent else None,
        "rent_price_date": rent["price_date"] if rent else None,
        "rent_note": (rent.get("column") or rent.get("note")) if rent else None,
        "rent_offers": len(offers),
    }


def _used(dev) -> dict[str, Any]:
    from .choose import device_price

    used = device_price(dev, used=True)
    if used.kind != "used":
        return {"used_price_usd": None, "used_price_source": None, "used_price_as_of": None}
    return {"used_price_usd": used.usd, "used_price_source": used.source, "used_price_as_of": used.as_of}


def hardware_records(query: str | None = None, *, min_memory: str | int | None = None, kind: str | None = None,
                     vendor: str | None = None) -> list[dict[str, Any]]:
    """The catalog devices that every word of ``query`` names (catalog.search_devices: id, name or an alias), with at
    least ``min_memory`` of memory as marketed (a size, "24G"; a unified-memory system's whole RAM), of ``kind`` (the
    form factor the site's /hardware page and `best --form` filter by: gpu — a desktop card —, laptop, apple, unified,
    cpu) and ``vendor``; catalog order. Bad filter values raise InputError naming the field."""
    from .hardware.catalog import search_devices
    from .shopping import FORM_FACTORS, VENDORS, form_factor, one_of
    from .units import parse_size

    kind, vendor = one_of("kind", kind, tuple(FORM_FACTORS)), one_of("vendor", vendor, VENDORS)
    floor = parse_size(min_memory, field="min-memory") if min_memory is not None else None
    return [device_record(d) for d in search_devices(query)
            if (kind is None or form_factor(d) == kind) and (vendor is None or d.vendor == vendor)
            and (floor is None or d.memory_bytes >= floor)]


def close_names(query: str) -> list[str]:
    """Up to five catalog ids near a query no device's words contain: the device find_device resolves the loose name
    to ("4090 24gb"), else its did-you-mean (difflib over every id, name and alias)."""
    from .hardware.catalog import UnknownDeviceError, find_device

    try:
        return [find_device(query).id]
    except UnknownDeviceError as e:
        return e.suggestions
