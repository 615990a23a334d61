"""`best` and `cost` asked the way people shop: a model by its size ("30B"), devices by vendor and form factor (a
laptop GPU, a Mac), a `--gpu` spec for cost (amounts.py bounds the money and time). One reading for the CLI, the
HTTP API, MCP and the site's pages, so a question typed in one of them means the same in the others."""

from __future__ import annotations

import re

from .errors import InputError

# catalog device kinds as people shop for them (a laptop GPU is kind "gpu" with form_factor "laptop")
FORM_FACTORS = {"gpu": "Desktop GPU", "laptop": "Laptop GPU", "apple": "Mac", "unified": "Mini PC / unified memory",
                "cpu": "CPU only"}
# the catalog's vendors (data/devices.json "vendor"; tests/unit/test_shop_filters.py keeps the two equal): "generic" is
# the CPU-only RAM configurations ("CPU, 8-channel DDR5-4800"), so `--vendor generic` lists or ranks what `--form cpu`
# does — accepted by every door (hardware, best, the API, MCP, the site), as `hardware` always accepted it
VENDORS = ("nvidia", "amd", "intel", "apple", "generic")


def form_factor(dev) -> str:
    """The FORM_FACTORS key of a catalog device."""
    from .choose import device_records

    if dev.kind == "gpu" and device_records().get(dev.id, {}).get("form_factor") == "laptop":
        return "laptop"
    return dev.kind


def one_of(field: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    """A device filter's value folded to one of ``allowed`` (None where blank: no filter), the one check of `hardware`'s
    --kind / --vendor and `best`'s --vendor / --form in every door; else an InputError naming the field, the values it
    accepts and the value as given."""
    word = (value or "").strip().lower()
    if not word:
        return None
    if word not in allowed:
        raise InputError(f"{field}: expected one of {', '.join(allowed)}, got '{(value or '').strip()}'")
    return word


def shop_devices(vendor: str | None = None, form: str | None = None) -> list | None:
    """The catalog devices of one vendor and/or form factor, for `best`'s ``devices``; None (every device) when
    neither is given."""
    from .hardware.catalog import load_devices

    vendor, form = one_of("vendor", vendor, VENDORS), one_of("form", form, tuple(FORM_FACTORS))
    if not vendor and not form:
        return None
    return [d for d in load_devices() if (not vendor or d.vendor == vendor) and (not form or form_factor(d) == form)]


_MODEL_SIZE = re.compile(r"^\s*(?:an?\s+)?(\d+(?:\.\d+)?)\s*b\s*(?:model)?\s*$", re.IGNORECASE)


def model_for(text: str) -> tuple[str, str | None]:
    """A model name as typed, or a size ("30B", "a 70b"): the catalog model nearest that parameter count,
    with a line saying which one was taken."""
    from .model import catalog

    m = _MODEL_SIZE.match(text)
    if not m:
        return text.strip(), None
    want = float(m.group(1)) * 1e9
    if not want > 0:
        raise InputError(f"model: a size must be above 0 parameters, got '{text.strip()}'")
    sized = [e for e in catalog.load_entries() if e.get("published_params")]
    pick = min(sized, key=lambda e: abs(e["published_params"] - want))
    return pick["alias"], (f"“{text.strip()}” ranked as {pick['alias']} ({pick['published_params'] / 1e9:.1f} B "
                           f"parameters), the catalog model nearest that size")


def best_for(model: str, *, policy=None, vendor: str | None = None, form: str | None = None, **options) -> dict:
    """`best` for a model named or sized, over the devices of a vendor / form factor: its JSON, with a line saying
    which catalog model a size was taken as."""
    from .choose import best
    from .model.resolve import resolve_model

    # checked as given (one_of folds the case itself), so a refusal quotes the value the way it was typed
    vendor, form = one_of("vendor", vendor, VENDORS), one_of("form", form, tuple(FORM_FACTORS))
    alias, sized = model_for(model)
    read, options = read_name(alias, options)
    devices = shop_devices(vendor, form)
    doc = best(resolve_model(read.model, policy), devices=devices, **options).to_dict()
    filters = [f"vendor {vendor}" if vendor else "", f"form factor {FORM_FACTORS[form]}" if form else ""]
    if any(filters):
        doc["notes"].insert(0, "devices: " + " and ".join(f for f in filters if f) + " only")
    if sized:
        doc["notes"].insert(0, sized)
    doc["notes"][:0] = read.notes
    return doc


def cost_for(model: str, gpu: str, *, policy=None, **options) -> dict:
    """`cost` for a model and a `--gpu` spec naming N of one catalog device: its JSON, with a line saying which
    variant a loose name ("m3 max") was taken as. ``options`` are choose.cost's, bounded by amounts.COST_BOUNDS."""
    from .choose import cost, parse_config
    from .hardware.catalog import variant_notes
    from .model.resolve import resolve_model

    dev, count = parse_config(gpu)
    read, options = read_name(model.strip(), options)
    doc = cost(resolve_model(read.model, policy), dev, count, **options)
    doc["notes"] = [*read.notes, *variant_notes(gpu), *doc["notes"]]      # "m3 max" → the 36 GB one, said
    return doc


def read_name(model: str, options: dict):
    """(the pull name read — runtimes/pull_names.read_model_name, as check reads it —, the options with the runtime
    and quant it chose; a runtime not given is request.DEFAULT_RUNTIME from here on)."""
    from .request import DEFAULT_RUNTIME
    from .runtimes.pull_names import read_model_name

    read = read_model_name(model, options.get("runtime"), options.get("quant"))
    # an hf.co/<repo>:<quant> name under Ollama is pulled as given, as check's command pulls it
    pull = {"ollama_pull": read.ollama_pull} if read.ollama_pull else {}
    return read, {**options, "runtime": read.runtime or DEFAULT_RUNTIME, "quant": read.quant, **pull}
