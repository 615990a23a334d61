"""Choosing hardware: Best GPU, the computed guides, Compare and Cost vs cloud.

Each page is the page form of a CLI command (`runlocal best`, `compare`, `cost`) over the same functions;
the guides are `best` and the catalog sweep run with fixed filters, so their verdicts are computed, never
written by hand.
"""

from __future__ import annotations

import threading
from functools import cache, lru_cache
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from ..errors import InputError, RunlocalError
from ..model.policy import ReadPolicy
from ..shopping import FORM_FACTORS, VENDORS, form_factor, model_for, one_of, shop_devices  # noqa: F401 (directory.py's)
from .site import _catalog_lists, _runtime_names, bounded, error_line, page, params, read_policy, unknown_names

router = APIRouter(include_in_schema=False)

TOP = 25


def _users(text: str) -> int:
    """The form's users: a whole number in amounts.COST_BOUNDS, in the words the CLI, HTTP and MCP use."""
    from ..amounts import check_amount

    try:
        value = float(text)
    except ValueError:
        raise InputError(f"users: expected a whole number, got '{text}'") from None
    check_amount("users", value)
    return int(value)


def _float(text: str | None, name: str) -> float | None:
    """A form's amount (budget, hours a day, kWh price, years, price, rent): None when blank, else a number within
    amounts.COST_BOUNDS, refused in the line the CLI, /api/v1 and MCP give for it, under the page's field name
    (``kwh_price: must be a finite number of USD per kWh from 0 to 100, got -1``; it had said "must be above
    -1e-12", and ``hours-per-day:``, a name the page has no field for: site23)."""
    from ..amounts import check_amount
    from ..request import field_spelling

    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{name}: expected a number, got '{text}'") from None
    try:
        check_amount(name.replace("_", "-"), value)      # NaN and ±inf included
    except InputError as bad:
        raise InputError(field_spelling(str(bad))) from None
    return value


def _ctx(text: str | None) -> int | None:
    from ..units import parse_tokens

    return parse_tokens(text) if text else None


# ------------------------------------------------------------------------------------------ best

@lru_cache(maxsize=128)
def best_rows(model: str, ctx: int | None, runtime: str | None, budget: float | None, used: bool, quant: str | None,
              vendor: str, form: str, users: int, policy: ReadPolicy) -> dict[str, Any]:
    """`runlocal best` with the page's vendor and form-factor filters (the device list it ranks), the model read
    under ``policy`` (the app's: site.read_policy)."""
    from ..choose import best
    from ..model.resolve import resolve_model
    from ..shopping import read_name

    read, chosen = read_name(model, {"runtime": runtime, "quant": quant})   # a pull name, as check reads it
    devices = shop_devices(vendor, form)
    res = best(resolve_model(read.model, policy), ctx=ctx, budget_usd=budget, used=used, devices=devices,
               users=users, **chosen).to_dict()
    res["notes"][:0] = read.notes
    return res


@router.get("/best", response_class=HTMLResponse)
async def best_page(request: Request):
    one, _ = params(request)
    q = {k: one.get(k, "") for k in ("model", "ctx", "runtime", "budget", "used", "vendor", "form", "quant",
                                     "users")}
    ignored = unknown_names(one, q)
    q["model"] = q["model"] or "llama-3.1-8b"
    result, error, sized = None, None, None
    try:
        model, sized = model_for(q["model"])
        q["vendor"] = one_of("vendor", q["vendor"], VENDORS) or ""
        q["form"] = one_of("form", q["form"], tuple(FORM_FACTORS)) or ""
        users = _users(q["users"]) if q["users"] else 1
        result = await bounded(request, best_rows, model, _ctx(q["ctx"]), q["runtime"] or None,
                               _float(q["budget"], "budget"), q["used"] == "1", q["quant"] or None,
                               q["vendor"], q["form"], users, read_policy(request))
    except RunlocalError as e:
        error = error_line(e)
    return page("best.html", request, status=422 if error else 200, q=q, result=result, error=error, top=TOP,
                sized=sized, uses=USES, catalog=_catalog_lists(), runtimes=_runtime_names(), vendors=VENDORS,
                forms=FORM_FACTORS, ignored=ignored)


# uses people ask about, as links into the same page (the model field also takes a size, "30B")
USES = (("A 30B at 32K for 4 users", {"model": "30B", "ctx": "32768", "users": "4", "runtime": "vllm"}),
        ("A 70B for one user at 8K", {"model": "70B", "ctx": "8192"}),
        ("An 8B on a laptop at 32K", {"model": "8B", "ctx": "32768", "form": "laptop"}),
        ("A 14B under $800, used", {"model": "14B", "ctx": "8192", "budget": "800", "used": "1"}))


# ------------------------------------------------------------------------------------------ guides

REFERENCE_MODELS = (("llama-3.1-8b", 8192), ("qwen3-32b", 8192), ("llama-3.3-70b", 8192))
# The Ollama guide ranks the file `ollama pull` downloads (the default tag's Q4_K_M, data/ollama_tags.json
# default_quant): one plan per device and count. Walking best's whole quant ladder instead took 125 s for a 70B on
# the 2-core machine, against 14 s for the one file.
OLLAMA_PULLED_QUANT = "Q4_K_M"
# the guides rank catalog models only: the public server's default policy reads nothing else
GUIDE_POLICY = ReadPolicy.server()


def _ranked(model: str, ctx: int, *, runtime: str = "llama.cpp", used: bool = False, vendor: str = "",
            form: str = "", budget: float | None = None, quant: str | None = None, n: int = 5) -> dict[str, Any]:
    res = best_rows(model, ctx, runtime, budget, used, quant, vendor, form, 1, GUIDE_POLICY)
    # devices without a price (laptop GPUs) are ranked by decode speed alone
    by_speed = not res["ranked"] and bool(res["unpriced"])
    rows = res["unpriced"] if by_speed else res["ranked"]
    # beside a priced ranking, the configurations that run it but have no catalog price are shown too (fastest
    # first) and counted: review21 #3, the Mac guide said "1 configurations run it" while 29 Macs did
    unpriced = [] if by_speed else sorted(res["unpriced"], key=lambda r: -(r["decode_tokens_per_s"] or 0))
    if budget:
        # under a budget an unpriced device cannot be judged: counted, not listed (a $30,000 MI355X is no answer to
        # "under $400")
        return {"model": model, "ctx": ctx, "runtime": runtime, "rows": rows[:n], "count": len(rows),
                "priced": len(rows), "unpriced": [], "unpriced_count": len(unpriced), "notes": res["notes"],
                "by_speed": by_speed, "query": _best_query(model, ctx, runtime, quant, used, vendor, form, budget)}
    return {"model": model, "ctx": ctx, "runtime": runtime, "rows": rows[:n], "count": len(rows) + len(unpriced),
            "priced": 0 if by_speed else len(rows), "unpriced": unpriced[:n], "unpriced_count": len(unpriced),
            "notes": res["notes"], "by_speed": by_speed,
            "query": _best_query(model, ctx, runtime, quant, used, vendor, form, budget)}


def _best_query(model: str, ctx: int, runtime: str, quant: str | None, used: bool, vendor: str, form: str,
                budget: float | None) -> dict[str, Any]:
    """The same ranking on /best, as a guide block links it."""
    return {"model": model, "ctx": ctx, "runtime": runtime, "quant": quant or "", "used": "1" if used else "",
            "vendor": vendor, "form": form, "budget": f"{budget:g}" if budget else ""}


def _guide_best(**filters) -> list[dict[str, Any]]:
    return [_ranked(m, c, **filters) for m, c in REFERENCE_MODELS]


def _guide_budget() -> list[dict[str, Any]]:
    return [dict(_ranked("qwen3-14b", 8192, budget=b, n=3), budget=b) for b in (400, 800, 1600, 3200)]


def _guide_16_vs_24() -> dict[str, Any]:
    from ..sweep import models_that_fit

    gib = 1024**3
    out = {}
    for ctx in (8192, 32768):
        small = {r["alias"]: r for r in models_that_fit(16 * gib, ctx, "llama.cpp")}
        large = {r["alias"]: r for r in models_that_fit(24 * gib, ctx, "llama.cpp")}
        out[ctx] = {"16": len(small), "24": len(large),
                    # in the sweep's order before the sort (not a set's: its order, and so the order of models of one
                    # size, changed with each process's string hashing)
                    "only24": sorted((r for a, r in large.items() if a not in small), key=lambda r: -r["weights_bytes"])}
    return {"contexts": out, "ranked16": _ranked("qwen3-14b", 8192, form="gpu", n=3)}


def _guide_cuda_rocm() -> dict[str, Any]:
    from ..choose import runtime_runs_on
    from ..hardware.catalog import load_devices
    from ..runtimes import runtime_names

    devs = [d for d in load_devices() if d.kind == "gpu"]
    support = [{"runtime": rt, **{v: sum(1 for d in devs if d.vendor == v and runtime_runs_on(rt, d))
                                  for v in ("nvidia", "amd")}} for rt in runtime_names()]
    totals = {v: sum(1 for d in devs if d.vendor == v) for v in ("nvidia", "amd")}
    ranked = {v: _ranked("qwen3-14b", 8192, vendor=v, form="gpu", n=5) for v in ("nvidia", "amd")}
    return {"support": support, "totals": totals, "ranked": ranked}


GUIDES: dict[str, tuple[str, str, Any]] = {
    "best-laptop": ("Best laptop GPU for local LLMs",
                    ("Laptop GPUs ranked by predicted decode speed (laptop GPUs have no price of their own), "
                     "for three model sizes at 8K context; Macs are in the Mac guide."),
                    lambda: _guide_best(form="laptop")),
    "best-gpu-for-ollama": ("Best GPU for Ollama",
                            ("GPUs and multi-GPU setups ranked by predicted decode speed per dollar with Ollama, for "
                             "the file ollama pull downloads (Q4_K_M), for three model sizes at 8K context."),
                            lambda: _guide_best(runtime="ollama", quant=OLLAMA_PULLED_QUANT)),
    "best-mac": ("Best Mac for local LLMs",
                 ("Apple silicon ranked by predicted decode speed per dollar with MLX, "
                  "for three model sizes at 8K context."),
                 lambda: _guide_best(runtime="mlx", form="apple")),
    "best-used-gpu": ("Best used GPU",
                      ("Desktop GPUs ranked by decode speed per dollar at used-market prices "
                       "(launch price where the catalog has no used price)."),
                      lambda: _guide_best(used=True, form="gpu")),
    "best-budget-gpu": ("Best GPU on a budget",
                        ("The best configurations for a 14B model at 8K context under each "
                         "budget (GPUs only, no host system)."),
                        _guide_budget),
    "16-vs-24-gb": ("16 GB or 24 GB?",
                    ("How many catalog models each size runs whole (llama.cpp, the best GGUF "
                     "that fits), and which ones only 24 GB runs."),
                    _guide_16_vs_24),
    "cuda-vs-rocm": ("CUDA or ROCm?",
                     ("Which runtimes the catalog's NVIDIA and AMD GPUs run, and how the best of "
                      "each rank for a 14B model."),
                     _guide_cuda_rocm),
}


_GUIDE_LOCKS = {slug: threading.Lock() for slug in GUIDES}


def guide_data(slug: str):
    """A guide's figures, computed once: a visitor who comes while the start-up warm-up computes it waits for
    that answer instead of computing it a second time."""
    with _GUIDE_LOCKS[slug]:
        return _computed_guide(slug)


@cache
def _computed_guide(slug: str):
    return GUIDES[slug][2]()


@router.get("/guides", response_class=HTMLResponse)
def guides_index(request: Request):
    return page("guides.html", request, guides=GUIDES)


@router.get("/guides/{slug}", response_class=HTMLResponse)
async def guide_page(request: Request, slug: str):
    if slug not in GUIDES:
        return page("not_found.html", request, status=404, what=f"guide '{slug}'")
    data = await bounded(request, guide_data, slug)
    title, intro, _ = GUIDES[slug]
    return page("guide.html", request, slug=slug, title=title, intro=intro, data=data, forms=FORM_FACTORS)


# ------------------------------------------------------------------------------------------ compare

@lru_cache(maxsize=128)
def compare_rows(devices: tuple[str, ...], model: str | None, ctx: int | None, runtime: str | None, quant: str | None,
                 used: bool, ram: str | None, policy: ReadPolicy) -> list[dict[str, Any]]:
    """`runlocal compare` rows, in the order given; a VRAM figure ("20G") is one GPU of that size, planned at the
    rows' one quant like any device (compare.vram_figure: the CLI's and the API's parser). ``ram`` is the host's
    System RAM as check's form and /api/v1/compare take it (request.py's --ram, parsed by targets_from_options); the
    model is read under ``policy`` (the app's: site.read_policy)."""
    from ..compare import compare_devices

    return compare_devices(list(devices), model=model, ctx=ctx, runtime=runtime, quant=quant, used=used, ram=ram,
                           policy=policy)


@router.get("/compare", response_class=HTMLResponse)
async def compare_page(request: Request):
    one, multi = params(request, lists=("d",))
    # d= is the page's device field (one per row); devices=a,b is /api/v1/compare's, read the same (review19 #6)
    picked = [d.strip() for d in multi.get("d", []) if d.strip()] \
        + [d.strip() for d in one.get("devices", "").split(",") if d.strip()]
    if not one:
        picked = ["rtx-4090", "rtx-3090", "2x3090"]
    q = {k: one.get(k, "").strip()[:64] if k == "ram" else one.get(k, "")
         for k in ("model", "ctx", "runtime", "quant", "used", "ram")}
    q["model"] = q["model"] if "model" in one else "llama-3.1-8b"
    ignored = unknown_names(one, {*q, "d", "devices"})
    rows, error = None, None
    # the devices' field as this query named it: the form's d, or /api/v1/compare's devices=a,b
    devices_field = "devices" if "devices" in one and "d" not in multi else "d"
    try:
        if not picked:
            raise InputError(f"{devices_field}: name at least one device (a catalog name, 2x3090, or a VRAM figure "
                             "such as 20G)")
        rows = await bounded(request, compare_rows, tuple(picked), q["model"].strip() or None, _ctx(q["ctx"]),
                                       q["runtime"] or None, q["quant"] or None, q["used"] == "1", q["ram"] or None,
                                       read_policy(request))
    except RunlocalError as e:
        error = error_line(e, {"gpu": devices_field})
    slots = picked + [""] * max(1, 4 - len(picked))
    api = {"devices": ",".join(picked), **{k: v for k, v in q.items() if k != "used"},
           "used": "true" if q["used"] == "1" else ""}
    return page("compare.html", request, status=422 if error else 200, q=q, rows=rows, error=error, slots=slots,
                api_query=api, ignored=ignored,
                catalog=_catalog_lists(), runtimes=_runtime_names())


# ------------------------------------------------------------------------------------------ cost

@router.get("/cost", response_class=HTMLResponse)
async def cost_page(request: Request):
    from ..amounts import COST_BOUNDS
    from ..choose import DEFAULT_CTX, DEFAULT_HOURS_PER_DAY, DEFAULT_KWH_PRICE, DEFAULT_YEARS

    one, _ = params(request)
    # the fields carry /api/v1/cost's names (the CLI's and MCP's), so a page's query is the API's; the names the
    # page used before (hours, kwh, rent) are still read, for the links made with them
    q = {k: one.get(k) or one.get(COST_OLD_NAMES.get(k, k), "")
         for k in ("model", "gpu", "runtime", "hours_per_day", "kwh_price", "years", "price", "rent_price", "used",
                   "ctx")}
    ignored = unknown_names(one, {*q, *COST_OLD_NAMES.values()})
    q["model"] = q["model"] or "llama-3.1-8b"
    q["gpu"] = q["gpu"] or "rtx-4090"
    result, chart, error = None, None, None
    try:
        result = await bounded(request, _cost, q, DEFAULT_HOURS_PER_DAY, DEFAULT_KWH_PRICE, DEFAULT_YEARS,
                               read_policy(request))
        chart = _cost_chart(result)
    except RunlocalError as e:
        error = error_line(e)
    return page("cost.html", request, status=422 if error else 200, q=q, r=result, chart=chart, error=error,
                catalog=_catalog_lists(), runtimes=_runtime_names(), ignored=ignored, bounds=COST_BOUNDS,
                defaults={"ctx": DEFAULT_CTX, "hours_per_day": DEFAULT_HOURS_PER_DAY, "kwh_price": DEFAULT_KWH_PRICE,
                          "years": DEFAULT_YEARS})


COST_OLD_NAMES = {"hours_per_day": "hours", "kwh_price": "kwh", "rent_price": "rent"}


def _cost(q: dict[str, str], hours: float, kwh: float, years: float, policy: ReadPolicy) -> dict[str, Any]:
    from ..shopping import cost_for

    return cost_for(q["model"], q["gpu"], policy=policy, ctx=_ctx(q["ctx"]), runtime=q["runtime"] or None,
                    hours_per_day=_given(_float(q["hours_per_day"], "hours_per_day"), hours),
                    kwh_price=_given(_float(q["kwh_price"], "kwh_price"), kwh),
                    years=_given(_float(q["years"], "years"), years), used=q["used"] == "1",
                    price_usd=_float(q["price"], "price"), rent_usd_per_hour=_float(q["rent_price"], "rent_price"))


def _given(value: float | None, default: float) -> float:
    """A blank field's default; a given one as given (a kWh price of 0 is free power, not the default)."""
    return default if value is None else value


def _cost_chart(r: dict[str, Any]):
    from .charts import breakeven_chart

    own, rent = r["own"], r["rent"]
    if own["amortised_per_year_usd"] is None or rent["usd_per_hour"] is None:
        return None
    per_hour = (own["power_kw"] or 0) * r["assumptions"]["kwh_price_usd"]
    return breakeven_chart(own["amortised_per_year_usd"], per_hour, rent["usd_per_hour"],
                           r["breakeven_hours_per_day"],
                           f"Cost per year of owning {r['spec']} against renting it, by hours used per day")
