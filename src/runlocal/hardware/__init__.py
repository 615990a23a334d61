"""Hardware: the device catalog (catalog.py), this machine's GPUs and RAM (detect.py), what a run is
planned on (targets.py) and predicted speed (speed.py).

The catalog names are re-exported lazily, so importing this package reads no data.
"""

from __future__ import annotations

from typing import Any

_CATALOG_NAMES = {"Device", "UnknownDeviceError", "find_device", "load_devices", "load_sources",
                  "parse_device_spec"}


def __getattr__(name: str) -> Any:
    if name in _CATALOG_NAMES:
        from . import catalog

        return getattr(catalog, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
