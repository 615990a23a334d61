"""What runs on one machine (`runlocal models --fits`, the site's device pages): the catalog models that fit a
memory size at a context, from the vectorized sweep (sweep.py), each row with check's verdict. Split from choose.py
(which ranks devices for a model) when that module reached its line budget; pure computation over the catalogs."""

from __future__ import annotations

from typing import Any

from .choose import DEFAULT_CTX, HOST_RAM_NOTE
from .errors import InputError
from .runtimes import engine, get_runtime

# Perplexity added by each llama-quantize type on Llama-3-8B, as llama.cpp lists them (tools/quantize/quantize.cpp
# QUANT_OPTIONS: "Q2_K … +3.5199 ppl @ Llama-3-8B" … "Q8_0 … +0.0026"); IQ4_XS is listed by its bits only (4.25 bpw,
# below Q4_K_S's +0.2689). What runs here lists first the models that run whole at Q4_K_M or a type adding less (the
# type published.default_quant plans without --quant), then those that fit only at a type adding more.
# The same list's other types with a figure: the legacy Q4_0 … Q5_1, the _S / _L K-quant mixes, F16 (+0.0020) and BF16
# (-0.0050), both "@ Mistral-7B". A type with no figure there (IQ*, MXFP4, TQ*: listed by bits per weight only) is
# ranked by its bytes against Q4_K_M's for the same model; a float type or the model's one published format never
# ranks below (fixes19c, review19b finding 9).
QUANTIZE_PPL = {"Q8_0": 0.0026, "Q6_K": 0.0217, "Q5_K_M": 0.0569, "Q4_K_M": 0.1754, "Q3_K_M": 0.6569, "Q2_K": 3.5199,
                "Q4_0": 0.4685, "Q4_1": 0.4511, "Q5_0": 0.1316, "Q5_1": 0.1062, "Q2_K_S": 3.1836, "Q3_K_S": 1.6321,
                "Q3_K_L": 0.5562, "Q4_K_S": 0.2689, "Q5_K_S": 0.1049, "F16": 0.0020, "BF16": -0.0050}
FLOAT_TYPES = ("F32", "F16", "BF16")
CHOSEN_PPL = QUANTIZE_PPL["Q4_K_M"]
DEGRADED_WORDS = "smaller than Q4_K_M: fits only so"


def below_chosen(quant: str | None, model=None) -> bool:
    """A type adding more perplexity than Q4_K_M (Q3_K_M, Q2_K: QUANTIZE_PPL), which `models --fits` and the device
    pages rank after every model that runs at Q4_K_M or better, marked DEGRADED_WORDS. A type llama-quantize lists no
    figure for: a float type or the model's one published format (gpt-oss's MXFP4) never; any other by its weights'
    bytes below Q4_K_M's for ``model`` (without one, as below)."""
    q = str(quant).upper()
    if q in QUANTIZE_PPL:
        return QUANTIZE_PPL[q] > CHOSEN_PPL
    if q in FLOAT_TYPES:
        return False
    if model is None:
        return True
    from .runtimes.published import default_quant
    from .weights import estimate

    published = default_quant(model, "llama.cpp")
    if published is not None and published[0].upper() == q:
        return False
    return estimate(model, str(quant)).total < estimate(model, "Q4_K_M").total


def _row_verdict(row: dict[str, Any], capacity: int, n_devices: int, named: bool, runtime: str = "llama.cpp") -> str:
    """check's words for a row (verdict.py, hardware/display_margin.py): "tight" above the runtime's tight line of the
    memory (verdict.tight_line: 90 %, vLLM's default share), or, on GPUs named rather than read, with less than
    DISPLAY_HEADROOM left on each; else "fits"."""
    from .hardware.display_margin import DISPLAY_HEADROOM
    from .verdict import tight_share

    line = tight_share(runtime)
    if row["peak_bytes"] > line * capacity or named and row["free_bytes"] < DISPLAY_HEADROOM * n_devices:
        return "tight"
    return "fits"


def _group_alike(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fine-tunes of one architecture at one quant plan to the same bytes: one row for them, the others named in
    its "alike" (review16: eight Qwen3-30B-A3B fine-tunes took 8 of a 3060's top 10 rows)."""
    first: dict[tuple, dict[str, Any]] = {}
    out = []
    for r in rows:
        key = (r["quant"], r["weights_bytes"], r["peak_bytes"], r["max_ctx"])
        if key in first:
            first[key]["alike"].append(r["alias"])
            continue
        first[key] = r = {**r, "alike": []}
        out.append(r)
    return out


def _never_loaded(alias: str, planner) -> bool:
    """A catalog model the runtime refuses whatever the memory (an architecture no llama.cpp build loads, under
    llama.cpp or Ollama v0.30+: runtimes/arch_support.NO_LLAMA_CPP; one vLLM dropped, under a release past its last:
    VLLM_LAST, keyed by the HF class): not listed as fitting, as `check` refuses it."""
    from .model.catalog import find_entry
    from .runtimes.arch_support import config_never_loads

    return config_never_loads(planner.name, getattr(planner, "version", None), (find_entry(alias) or {}).get("config", {}))


def models_fitting(capacity: int, ctx: int, *, runtime: str = "llama.cpp", bandwidth_gbs: float | None = None,
                   device=None, n_devices: int = 1, cpu: bool = False, speed_rows: int | None = None,
                   named: bool = False, group_alike: bool = False) -> list[dict[str, Any]]:
    """Catalog models that fit in ``capacity`` bytes at ``ctx`` (the vectorized sweep), best quant each, with check's
    verdict: those at Q4_K_M or a more accurate type first, then those only a smaller type fits (``degraded``:
    below_chosen), each "fits" rows first, then "tight", largest first within each, with a predicted decode speed where the
    device (or its bandwidth) is known — for the first ``speed_rows`` rows only when given (a table that shows
    those: each speed builds the model's spec). ``named``: the GPUs were named, not read (the display margin
    applies); ``group_alike``: one row per set of identical plans."""
    from .sweep import models_that_fit

    if ctx <= 0:
        raise InputError(f"ctx: must be a positive number of tokens, got {ctx}")
    rows = [r for r in models_that_fit(int(capacity), int(ctx), get_runtime(runtime).name)
            if not _never_loaded(r["alias"], get_runtime(runtime))]
    for r in rows:
        r["verdict"] = _row_verdict(r, int(capacity), n_devices, named and not cpu, get_runtime(runtime).name)
    for r in rows:
        r["degraded"] = below_chosen(r["quant"])
    # Q4_K_M or better before a smaller type, then "fits" before "tight"; stable: largest first within each
    rows.sort(key=lambda r: (r["degraded"], r["verdict"] != "fits"))
    if group_alike:
        rows = _group_alike(rows)
    kind = "cpu" if (device is None and cpu) else "gpu"
    if device is not None or bandwidth_gbs:
        from .hardware.speed import predict
        from .model import catalog

        for r in rows[:speed_rows]:
            try:
                spec = catalog.lookup(r["alias"])
                dev = device if device is not None else _bandwidth_device(bandwidth_gbs, kind)
                est = predict(spec, r["weights_bytes"], dev, quant=r["quant"], ctx=ctx // 2, n_devices=n_devices)
                r["decode_tokens_per_s"] = round(est.decode_tokens_per_s, 1) if est.decode_tokens_per_s else None
            except Exception:  # a model the speed model cannot express keeps its row, without a speed
                r["decode_tokens_per_s"] = None
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    return rows


def _bandwidth_device(bandwidth_gbs: float | None, kind: str = "gpu"):
    from .hardware.catalog import Device

    return Device(id="given", name="given", vendor="", kind=kind, family="given", aliases=(), memory_bytes=0,
                  memory_type=None, bandwidth_gbs=float(bandwidth_gbs or 0))


def fits_here(gpu: str | None = "auto", vram: str | None = None, ram: str | None = None, *, ctx: int | None = None,
              runtime: str = "llama.cpp", speed_rows: int | None = None) -> dict[str, Any]:
    """`runlocal models --fits`: the machine (this one with ``gpu`` "auto", or a catalog spec, or --vram) →
    the catalog models that run on it at ``ctx``, largest first. GPUs' memory is added up (a layer split);
    with no GPU the CPU's RAM is the capacity. ``speed_rows``: predict the speed of only the first rows (the
    text table's)."""
    from .hardware.catalog import find_device
    from .hardware.targets import targets_from_options
    from .plan import DEFAULT_RAM_BANDWIDTH_GBS

    ctx = ctx or DEFAULT_CTX
    targets, notes = targets_from_options(gpu, vram, ram)
    gpus = [t for t in targets if t.kind != "cpu"]
    side = gpus or [t for t in targets if t.kind == "cpu"]
    capacity = sum(t.capacity for t in side)
    device = None
    try:
        device = find_device(side[0].name.split(" #")[0]) if side else None
    except ValueError:
        device = None
    if device is None and gpu and gpu.strip().lower() not in ("auto", "none", "cpu", ""):
        try:
            from .hardware.catalog import parse_device_spec

            device = next((d for d in parse_device_spec(gpu) if (d.kind == "cpu") == (not gpus)), None)
        except ValueError:
            device = None
    bandwidth = side[0].bandwidth_gbs if side else None
    if device is None and not gpus:
        bandwidth = bandwidth or DEFAULT_RAM_BANDWIDTH_GBS
        notes.append(f"CPU run: RAM bandwidth {bandwidth:g} GB/s assumed for speed (name a CPU system with --gpu,"
                     " e.g. 'ddr5-6400 2ch')")
    assumed = [n for n in notes if n.startswith("RAM: assumed")]
    if assumed:
        notes = [n for n in notes if n not in assumed]
        # no list turns on an unstated RAM size: with GPUs it does not enter; CPU-only, each row says what it needs
        notes.append(HOST_RAM_NOTE if gpus else
                     f"RAM: {assumed[0][len('RAM: assumed '):].split(' (')[0]} assumed, not read from a machine — "
                     "a row runs if your RAM is at least its peak (set --ram to your size)")
    if len(side) > 1:
        notes.append(f"{len(side)} GPUs: their free memory is added up (a layer split)")
    if not gpus:
        notes.append("no GPU: the sweep's GPU memory line is applied to RAM (weights + KV + compute buffers)")
    named = bool(vram) or (gpu or "auto").strip().lower() not in ("auto",)
    rows = models_fitting(capacity, ctx, runtime=runtime, bandwidth_gbs=None if device is not None else bandwidth,
                          device=device, n_devices=max(1, len(gpus)), cpu=not gpus, speed_rows=speed_rows,
                          named=named, group_alike=True)
    if gpus and engine(get_runtime(runtime).name).fit_offload:
        notes.append("each row holds every layer on the GPU (llama-server -ngl 99, --fit then moves nothing); "
                     "\"tight\" is check's word: above 90 % of the memory" + (", or under 1 GiB left per GPU named"
                                                                             if named else "")
                     + " — there llama-server's default --fit may move layers or experts to RAM, slower "
                       "(runlocal check MODEL says what it moves)")
    if device is None and bandwidth is None:
        notes.append("speed: no bandwidth known for this device; decode speed left out")
    return {"devices": [{"name": t.name, "kind": t.kind, "capacity_bytes": t.capacity} for t in side],
            "capacity_bytes": capacity, "ctx": ctx, "runtime": get_runtime(runtime).name,
            "models": rows, "notes": notes}


def models_answer(req, speed_rows: int | None = None) -> Any:
    """`runlocal models [--fits] --json`, MCP's models tool and GET /api/v1/models: one answer for one
    request.ModelsRequest — the catalog listing (filtered by ``query``), or with ``fits`` fits_here's document."""
    from .model import catalog
    from .request import validate_request
    from .units import parse_tokens

    validate_request(req)
    if req.fits:
        if req.query:
            raise InputError("query: filters the plain listing; leave it out with fits")
        ctx = parse_tokens(req.ctx, field="ctx") if req.ctx is not None else None
        return fits_here(req.gpu, req.vram, req.ram, ctx=ctx, speed_rows=speed_rows)
    unused = [name for name in ("vram", "ram", "ctx") if getattr(req, name) is not None]
    if unused or req.gpu != "auto":
        raise InputError(f"{(unused or ['gpu'])[0]}: applies with fits only (the plain listing is the whole catalog)")
    return [catalog.listing_row(e) for e in catalog.matching(req.query)]
