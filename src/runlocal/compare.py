"""Devices side by side: capacity, bandwidth, price, the largest catalog model that fits, and for a model the
verdict, the weight format that fits, the largest context and the predicted speed.

Each name is a `--gpu` spec: a catalog name ("4090", "m3 max 64gb", "ddr5-6400 12ch") or several of one card
("2x3090"), or a VRAM figure ("20G", "2x24G": GPUs known by their memory alone, as `check --vram`). Used by
`runlocal compare`, /api/v1/compare and the site's Compare page (same rows, in the order given). Each row's verdict,
largest context and speed are the plan `check` makes for that device (check.settled_plan)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .errors import InputError
from .request import DEFAULT_RUNTIME

if TYPE_CHECKING:
    from .model.spec import ModelSpec

MAX_COMPARE = 16


def _largest_catalog_model(capacity: int, ctx: int, runtime: str) -> dict[str, Any] | None:
    from .sweep import largest_model_that_fits

    try:
        top = largest_model_that_fits(capacity, ctx, runtime)
    except Exception:  # a runtime the sweep cannot plan: leave the column empty rather than fail the table
        return None
    if top is None:
        return None
    return {"alias": top["alias"], "quant": top["quant"], "ctx": ctx, "weights_bytes": top["weights_bytes"],
            "runtime": runtime}


def _used_price(dev) -> dict[str, Any]:
    """The catalog's used-market price for a device and its source (a dated page), or nothing."""
    from .choose import device_records
    from .hardware.catalog import load_sources

    raw = device_records().get(dev.id, {})
    if not raw.get("used_price_usd"):
        return {"used_price_usd": None, "used_price_source": None, "used_price_as_of": None}
    src = raw.get("used_price_source")
    return {"used_price_usd": raw["used_price_usd"], "used_price_source": load_sources().get(str(src), src),
            "used_price_as_of": raw.get("used_price_as_of")}


class _Plans:
    """The plans of one compare call, each made once per (device, settings): a row's own format, then the one format
    every row is shown at, often the same. The verdict, speed and command come from the plan's first step alone
    (plan.judge_plan: make_plan's quick_plan); the longest-context search runs only for a plan a row shows."""

    def __init__(self, spec: ModelSpec, runtime: str, ctx: int, ollama_pull: str | None = None):
        from .runtimes import get_runtime

        self.spec, self.runtime, self.ctx = spec, runtime, ctx
        self.ollama_pull = ollama_pull      # the hf.co/<repo>:<quant> name given, pulled as given (plan_fit's)
        self.planner = get_runtime(runtime)
        self._quick: dict = {}
        self._full: dict = {}

    def _key(self, targets, quant) -> tuple:
        from .runtimes import Settings
        from .runtimes.tensor_parallel import largest_tp

        n_gpus = sum(1 for t in targets if t.kind != "cpu")
        tp = largest_tp(self.spec, n_gpus) if (n_gpus > 1 and self.planner.pools_kv) else 1   # as `check` picks it
        settings = Settings(runtime=self.planner.name, ctx=self.ctx, quant=quant, tp=tp)
        from .runtimes.vllm_unified import starting_share

        if (share := starting_share(self.planner, targets)) is not None:   # vLLM on a DGX Spark: what starts (best's)
            settings = settings.with_(gpu_memory_utilization=share)
        return tuple(targets), settings.with_(ollama_pull=self.ollama_pull) if self.ollama_pull and quant else settings

    def quick(self, targets, quant):
        """make_plan's weights, allocation, verdict and speed for this device and format, without its searches."""
        from .plan import judge_plan

        key = self._key(targets, quant)
        if key not in self._quick:
            self._quick[key] = judge_plan(self.spec, key[1], list(key[0]), runtime=self.planner)
        return self._quick[key]

    def shown(self, targets, quant, notes: list[str]) -> dict[str, Any]:
        """The plan a row shows, made as `check` makes it (check.settled_plan: the host's RAM settled when it was
        assumed, a named GPU's desktop margin), less the fixes and the concurrency table the rows do not show: its
        verdict, largest context, speed and the conditions it holds under."""
        from .check import settled_plan
        from .hardware.assumed_ram import ram_was_assumed
        from .weights import unsloth_command

        key = (*self._key(targets, quant), ram_was_assumed(notes))
        if key not in self._full:
            plan = settled_plan(self.spec, key[1], list(key[0]), notes, self.planner, gpu_named=True,
                                with_fixes=False, with_concurrency=False)
            self._full[key] = {"quant": plan.weights.quant, "verdict": plan.verdict, "max_context": plan.max_context,
                               "max_context_basis": plan.max_context_basis, **plan.speed,
                               "command": unsloth_command(self.spec, quant, self.planner, plan.allocation.settings),
                               "conditions": list(plan.conditions)}
        return self._full[key]

    def fields(self, targets, quant) -> dict[str, Any]:
        """A row's plan columns, max_context left to fill (None) until the row is known to show this plan."""
        from .weights import unsloth_command

        quick = self.quick(targets, quant)
        return {"quant": quick.weights.quant, "verdict": quick.verdict, "max_context": None,
                "max_context_basis": None, **quick.speed,
                "command": unsloth_command(self.spec, quant, self.planner, quick.allocation.settings)}


def compare_devices(names: list[str], *, model: str | None = None, ctx: int | None = None,
                    runtime: str | None = None, quant: str | None = None, used: bool = False,
                    policy=None, best_quant_each: bool = False, ram: str | None = None) -> list[dict[str, Any]]:
    """The rows, in the order named. ``ram`` is the host's RAM (as `check --ram`); unstated, each row's plan says
    what RAM it needs where the verdict turns on it, as check's does."""
    from .choose import DEFAULT_CTX, _may_run_whole, best_fit, quant_ladder, runtime_label
    from .runtimes import get_runtime

    names = [n.strip() for n in names if n and n.strip()]
    if not names:
        raise InputError("devices: name at least one device")
    if len(names) > MAX_COMPARE:
        raise InputError(f"devices: compare at most {MAX_COMPARE} devices at once")
    if ctx is not None and ctx <= 0:
        raise InputError(f"ctx: must be a positive number of tokens, got {ctx}")
    read_as: tuple[str, ...] = ()
    pull = None
    if model:       # an Ollama tag or Hub name, read as check reads it (runtimes/pull_names.read_model_name)
        from .shopping import read_name

        read, chosen = read_name(model, {"runtime": runtime, "quant": quant})
        model, runtime, quant, read_as, pull = read.model, chosen["runtime"], chosen["quant"], read.notes, read.ollama_pull
    runtime = runtime or DEFAULT_RUNTIME
    planner = get_runtime(runtime)      # 'vllm==0.19.0': that release's rules in every plan (runtimes/versions.py)
    rt = planner.name
    label, rules = runtime_label(planner)
    sweep_ctx = ctx or DEFAULT_CTX
    spec = None
    if model:
        from .model.resolve import resolve_model

        spec = resolve_model(model, policy)     # policy: what a server may read (model/policy.py)
        from .choose import refuse_unloadable

        refuse_unloadable(spec, planner, quant)     # the build, and a --quant it cannot load, as check refuses them
    plans = _Plans(spec, runtime, sweep_ctx, pull) if spec is not None else None
    host_cache: dict = {}                 # what the runtime keeps in RAM per format (choose.plan_fit's)
    rows: list[dict[str, Any]] = []
    shown: dict[int, tuple] = {}          # shown: row index → (targets, quant) of the plan whose max_context it shows
    hardware: list[tuple[list, list[str]]] = []   # each row's targets and the notes on where their sizes came from
    for name in names:
        row, targets, notes = _device_row(name, used, sweep_ctx, ram)
        hardware.append((targets, notes))
        if plans is not None:
            from .check import refuse_pairing

            refuse_pairing(rt, None if vram_figure(name) is not None else name, targets)   # as check refuses it
            ladder = quant_ladder(rt, quant, plans.spec)
            # formats the GPUs cannot hold whole are not planned (choose._may_run_whole: they would not run)
            can_run = _may_run_whole(plans.spec, targets, rt, sweep_ctx, ladder, host_cache)
            fit = best_fit(plans.spec, targets, runtime=runtime, ctx=sweep_ctx, quants=can_run,
                           host_cache=host_cache, ollama_pull=pull) if can_run else None
            q = fit.settings.quant if fit else ladder[-1]        # none fits: show the smallest format's plan
            fields = plans.fields(targets, q)
            row |= {"runtime": label, "runtime_rules": rules, "quant": fields.pop("quant"),
                    "verdict": fields.pop("verdict"), "runs_whole": fit is not None, **fields}
            shown[len(rows)] = (targets, q)
            _say_idle_gpus(row, plans.spec, rt, targets)
        rows.append(row)
    if plans is not None and not quant and not best_quant_each:
        shown |= _same_quant(rows, [t for t, _ in hardware], plans, quant_ladder(rt, None, plans.spec))
    for i, (targets, q) in shown.items():
        if plans is not None:
            rows[i] |= plans.shown(targets, q, hardware[i][1])
            if rows[i]["verdict"] == "does_not_fit" or rows[i]["id"] is None:
                _no_speed(rows[i])      # no speed for a setup that does not start (check's speed_phrase says none)
            _speed_per_price(rows[i])
    if read_as and rows:        # how the model's name was read, said once (check says it in its notes)
        rows[0]["variant_notes"] = [*read_as, *rows[0].get("variant_notes", [])]
    return rows


def _speed_per_price(row: dict[str, Any]) -> None:
    """tok/s per 1,000 USD for every row shown with a price and a decode speed: the speed it shows over the price it
    shows — also where part of the model is in system RAM (review17b #9: "—" on priced rows with a speed, no reason
    given); the price is the GPUs' only, as the page and the CLI say."""
    if row.get("price_usd") and row.get("decode_tokens_per_s"):
        row["tokens_per_s_per_1000_usd"] = round(row["decode_tokens_per_s"] / row["price_usd"] * 1000, 3)
    else:
        row.pop("tokens_per_s_per_1000_usd", None)


def _no_speed(row: dict[str, Any]) -> None:
    """A row that does not start (as check, which prints no speed for it), or a VRAM figure's row: no bandwidth is
    known for its GPU (a plan that leaves the GPU nothing to do would otherwise show the CPU's speed at an assumed RAM
    bandwidth as the figure's)."""
    for key in ("decode_tokens_per_s", "decode_short_tokens_per_s", "prefill_tokens_per_s", "time_to_first_token_s",
                "prefill_range_tokens_per_s"):
        if key in row:
            row[key] = None
    row.pop("tokens_per_s_per_1000_usd", None)


# A VRAM figure in place of a device name: one GPU of that size ("20G", "24GB") or several alike ("2x24G"); a unit
# is required, so that a bare "4090" stays the catalog's card (units.parse_sizes reads the figure).
_VRAM_FIGURE = re.compile(r"^\s*(\d+\s*[x×*]\s*)?(\d+(\.\d+)?|\.\d+)\s*([kmgt]i?b?)\s*$", re.IGNORECASE)


def _say_idle_gpus(row: dict[str, Any], spec, runtime: str, targets) -> None:
    """vLLM / SGLang at the largest TP that splits the heads (check's _default_tp): GPUs beyond it hold nothing, which
    check says and a row's price, memory and tok/s per 1k USD (all the GPUs) would otherwise hide."""
    from .runtimes import get_runtime
    from .runtimes.tensor_parallel import largest_tp

    gpus = sum(1 for t in targets if t.kind != "cpu")
    if gpus < 2 or not get_runtime(runtime).pools_kv:
        return
    tp = largest_tp(spec, gpus)
    if tp < gpus:
        row["idle_gpus"] = gpus - tp
        row["variant_notes"] = [*row.get("variant_notes", []), (
            f"{row['spec']}: planned at tensor parallel {tp} (the attention heads do not split {gpus} ways), so "
            f"{gpus - tp} of the {gpus} GPUs stay{'s' if gpus - tp == 1 else ''} idle — the price, memory and tok/s "
            f"per 1k USD count all {gpus} (check --tp 1 --pp {gpus} puts layers on all of them)")]


def vram_figure(name: str) -> list[int] | None:
    """The GPU sizes a compare entry names when it is a VRAM figure rather than a catalog device, else None."""
    from .units import parse_sizes

    return parse_sizes(name, field="devices") if _VRAM_FIGURE.match(name) else None


def _device_row(name: str, used: bool, sweep_ctx: int, ram: str | None = None) -> tuple[dict[str, Any], list, list[str]]:
    """The hardware columns of a row (capacity, bandwidth, prices, the largest catalog model), its targets and the
    notes on where their sizes came from."""
    from .choose import device_price, spec_string
    from .hardware.catalog import parse_device_spec
    from .hardware.targets import targets_from_options

    sizes = vram_figure(name)
    if sizes is not None:
        return _figure_row(name, sizes, sweep_ctx, ram)
    devs = parse_device_spec(name)
    dev, count = devs[0], len(devs)
    mixed = any(d.id != dev.id for d in devs)
    targets, named = targets_from_options(name, None, ram)
    gpu_side = [t for t in targets if t.kind != "cpu"] or targets
    capacity = sum(t.capacity for t in gpu_side)
    price = device_price(dev, used=used) if not mixed else None
    total_price = (sum(device_price(d, used=used).usd or 0 for d in devs)
                   if mixed and all(device_price(d, used=used).usd for d in devs)
                   else (price.usd * count if price and price.usd is not None else None))
    row: dict[str, Any] = {
        "spec": name if mixed else spec_string(dev.id, count), "id": dev.id, "name": dev.name, "count": count,
        "kind": dev.kind, "memory_bytes": sum(d.memory_bytes for d in devs), "usable_bytes": capacity,
        "bandwidth_gbs": dev.bandwidth_gbs, "fp16_tflops": dev.fp16_tflops, "tdp_w": dev.tdp_w,
        "launch_price_usd": dev.launch_price_usd, "launch_year": getattr(dev, "launch_year", None),
        # when that price was set: a Mac's announcement date (its base configuration's), else the launch year
        "launch_price_as_of": device_price(dev).as_of if dev.launch_price_usd else None,
        **_used_price(dev), "price_usd": total_price,
        "price_kind": price.kind if price else None, "price_source": price.source if price else None,
        "price_as_of": price.as_of if price else None,
        "largest_model": _largest_catalog_model(capacity, sweep_ctx, "llama.cpp"),   # the sweep's GGUF ladder
    }
    row["variant_notes"] = [n for n in named if "is taken as" in n]    # "m3 max" → the 36 GB one, said
    if len(gpu_side) > 1:
        row["largest_model_note"] = "the sweep adds the devices' capacities (a layer split over them)"
    return row, targets, named


def _figure_row(name: str, sizes: list[int], sweep_ctx: int, ram: str | None) -> tuple[dict[str, Any], list, list[str]]:
    """A row for GPUs known only by their memory, planned as `check --vram` plans them: no bandwidth, so no speed;
    no price, so no value per dollar."""
    from .hardware.targets import targets_from_options

    targets, notes = targets_from_options(None, name, ram)
    capacity = sum(t.capacity for t in targets if t.kind != "cpu")
    row: dict[str, Any] = {
        "spec": name.strip(), "id": None, "name": f"Custom GPU{'s' if len(sizes) > 1 else ''}, {name.strip()}",
        "count": len(sizes), "kind": "gpu", "memory_bytes": sum(sizes), "usable_bytes": capacity,
        "bandwidth_gbs": None, "fp16_tflops": None, "tdp_w": None, "launch_price_usd": None, "launch_year": None,
        "used_price_usd": None, "used_price_source": None, "used_price_as_of": None, "price_usd": None,
        "price_kind": None, "price_source": None, "price_as_of": None,
        "largest_model": _largest_catalog_model(capacity, sweep_ctx, "llama.cpp"), "variant_notes": [],
    }
    if len(sizes) > 1:
        row["largest_model_note"] = "the sweep adds the devices' capacities (a layer split over them)"
    return row, targets, notes


def _same_quant(rows: list[dict[str, Any]], row_targets: list[list], plans: _Plans, ladder) -> dict[int, tuple]:
    """One quant for every device, so the rows compare hardware and not formats: the best that fits them all
    (the smallest of each device's best); each row keeps its own best as ``best_quant``. Returns, for each row
    now showing another plan, that plan's (targets, quant)."""
    from .choose import download_quant

    order = {str(q).upper(): i for i, q in enumerate(ladder)}
    whole = [i for i, r in enumerate(rows) if r.get("runs_whole")]
    if not whole:
        return {}

    # the file people download for the runtime, as `check` and `best` plan it, when every device holds it
    download = download_quant(plans.spec, plans.runtime)
    planned = download is not None and not any(
        plans.quick(row_targets[i], download).verdict == "does_not_fit" for i in whole)
    if planned:
        common = download
    elif len({r["quant"] for r in rows}) < 2:
        return {}
    else:
        common = max((rows[i]["quant"] for i in whole), key=lambda q: order.get(str(q).upper(), -1))
    shown = {}
    for i, r in enumerate(rows):
        r["best_quant"] = r["quant"]
        if r["quant"] == common and not planned:
            continue
        targets = row_targets[i]
        fields = plans.fields(targets, common)
        r |= fields
        shown[i] = (targets, common)
    return shown
