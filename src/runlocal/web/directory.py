"""The reference pages: the errors KB and diagnosis, the models, hardware and benchmarks directories with
the submission form, and Methodology, Glossary and the public API."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from ..errors import RunlocalError
from .site import _catalog_lists, _runtime_names, bounded, page, params, read_policy, stored_benchmarks, unknown_names

router = APIRouter(include_in_schema=False)
MAX_LOG = 256 * 1024


def prose(text: str) -> Markup:
    """The KB's Markdown bodies as HTML: paragraphs and `code`, nothing else (the entries use no more)."""
    out = []
    for para in re.split(r"\n\s*\n", text.strip()):
        html = re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(" ".join(para.split()))))
        out.append(f"<p>{html}</p>")
    return Markup("".join(out))


# ------------------------------------------------------------------------------------------ errors

@router.get("/errors", response_class=HTMLResponse)
def errors_index(request: Request):
    from ..diagnose import kb

    one, _ = params(request)
    q = one.get("q", "").strip()[:200]
    entries = kb.search(q) if q else sorted(kb.load_entries(), key=lambda e: (e.category, e.title))
    return page("errors.html", request, q=q, entries=entries, runtimes=_runtime_names(),
                ignored=unknown_names(one, ("q",)))


@router.get("/errors/diagnose", response_class=HTMLResponse)
def diagnose_form(request: Request):
    return page("diagnose.html", request, text="", runtime="", result=None, error=None, runtimes=_runtime_names())


@router.post("/errors/diagnose", response_class=HTMLResponse)
async def diagnose_post(request: Request):
    """A pasted log (form-encoded): its figures extracted, the matching entry and the computed fixes."""
    body = await request.body()
    form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
    text, runtime = form.get("text", ""), form.get("runtime") or None
    result, error, status = None, None, 200
    if not text.strip():
        error, status = "text: paste an error message or a log", 422
    elif len(text) > MAX_LOG:
        error, status = f"text: at most {MAX_LOG // 1024} KiB of log", 413
    else:
        try:
            diagnosis, result = await bounded(request, _diagnosed, text, runtime, read_policy(request))
            result["entry_id"] = diagnosis.entry.id if diagnosis.entry else None
            result["matched_line"] = diagnosis.matched_line
        except RunlocalError as e:
            error, status = str(e), 422
    return page("diagnose.html", request, status=status, text=text, runtime=runtime or "", result=result,
                error=error, runtimes=_runtime_names())


def _diagnosed(text: str, runtime: str | None, policy):
    """(diagnosis, its computed fixes): the fixes plan, so the page runs this on the planning pool, as the API does;
    a model the log names is read under ``policy`` (the app's), as the API reads it."""
    from ..diagnose.fixes import with_computed_fixes
    from ..diagnose.reading import diagnose_text

    diagnosis = diagnose_text(text, runtime=runtime)
    return diagnosis, with_computed_fixes(diagnosis, runtime, policy)


@router.get("/errors/{entry_id}", response_class=HTMLResponse)
def error_entry(request: Request, entry_id: str):
    from ..diagnose import kb

    entry = kb.get(entry_id)
    if entry is None:
        return page("not_found.html", request, status=404, what=f"errors KB entry '{entry_id}'")
    related = [r for r in (kb.get(x) for x in entry.related) if r is not None]
    return page("error.html", request, e=entry, body=prose(entry.body), related=related,
                ignored=unknown_names(params(request)[0], ()))


# ------------------------------------------------------------------------------------------ models

@router.get("/models", response_class=HTMLResponse)
def models_index(request: Request):
    from ..model import catalog

    one, _ = params(request)
    q = one.get("q", "").strip().lower()[:100]
    # the rows GET /api/v1/models?q= answers (the page links to them)
    return page("models.html", request, q=q, rows=catalog.matching(q), ignored=unknown_names(one, ("q",)))


# the compute table is built for these at 8,192 (compute_table_build.MODEL_PAGE_DEVICES, kept equal by a test)
MODEL_PAGE_CTX = 8192
REFERENCE_DEVICES = ("rtx-4070-laptop", "rtx-4060", "rtx-3060-12gb", "rtx-4090-laptop", "rtx-4080", "rtx-4090",
                     "rtx-5090", "rtx-6000-ada", "a100-80gb", "h100-sxm", "m4-max-128gb")


@lru_cache(maxsize=128)
def model_facts(alias: str, policy) -> dict[str, Any]:
    """A catalog model: its shape, weights per format, and which reference devices run it, at what context. Planned
    under ``policy``, the server's read policy (site.read_policy) as every page plans: the page takes catalog names
    only today, and the policy keeps a later change to that from making the server read a path or fetch a URL."""
    from ..check import CheckRequest, check
    from ..choose import QUANT_LADDERS
    from ..hardware.catalog import find_device
    from ..model.catalog import find_entry, lookup
    from ..plan import estimate

    entry = find_entry(alias)
    spec = lookup(alias)
    quants = [*QUANT_LADDERS["llama.cpp"], "bf16", "fp8", "awq"]
    weights = []
    for q in quants:
        try:
            weights.append((q, estimate(spec, q).total))
        except RunlocalError:
            continue
    runs = []
    for dev_id in REFERENCE_DEVICES:
        try:
            dev = find_device(dev_id)
            # the page shows neither the fixes nor the most requests at once: not planned (review19 #13)
            plan, _ = check(CheckRequest(model=alias, gpu=dev.id, ctx=MODEL_PAGE_CTX, use_measurements=False), policy,
                            with_fixes=False, with_concurrency=False)
        except RunlocalError:
            continue
        # a card that holds only some layers still "runs" it under --fit: the row says how much is on the GPU
        partly = (f"{plan.settings.llamacpp.n_gpu_layers} of {spec.n_layers + 1} layers on the GPU"
                  if plan.allocation.compromise and plan.settings.llamacpp.n_gpu_layers is not None else None)
        runs.append({"device": dev, "verdict": plan.verdict, "max_context": plan.max_context, "partly": partly,
                     "quant": plan.weights.quant, "decode": plan.speed.get("decode_tokens_per_s"),
                     "refusal": plan.allocation.refusal})
    kv = plan.allocation.kv_bytes_per_token if runs else None
    # llama.cpp refusing the model on every device is no memory verdict: the page says why, instead of a column of
    # "Does not fit", and its links plan with a runtime that loads it — /best?model=llama-3.2-11b-vision answered 422
    # (site23's crawl: the only one of the catalog's 312 models whose Best link failed)
    refusal = runs[0]["refusal"] if runs and all(r["refusal"] for r in runs) else None
    loads_with = _runtime_that_loads(alias, policy) if refusal else None
    return {"entry": entry, "spec": spec, "weights": weights, "runs": runs, "kv_per_token": kv, "refusal": refusal,
            "loads_with": loads_with}


def _runtime_that_loads(alias: str, policy) -> str | None:
    """The first runtime, in the order the site lists them, whose plan of ``alias`` on one 80 GB GPU is not refused
    (the refusal is the model's architecture, not its size), or None."""
    from ..check import CheckRequest, check
    from ..request import DEFAULT_RUNTIME
    from .site import _runtime_names

    for runtime in _runtime_names():
        if runtime == DEFAULT_RUNTIME:       # the page's own plan, the one refused
            continue
        try:
            plan, _ = check(CheckRequest(model=alias, gpu="h100-sxm", ctx=MODEL_PAGE_CTX, runtime=runtime,
                                         use_measurements=False), policy, with_fixes=False, with_concurrency=False)
        except RunlocalError:
            continue
        if plan.allocation.refusal is None:
            return runtime
    return None


def _model_suggestions(alias: str) -> list[str]:
    """The catalog's did-you-mean for a name it does not hold (llama3 → llama-3-8b, …), as check says it."""
    from ..model.catalog import lookup

    try:
        lookup(alias)
    except RunlocalError as e:
        _, _, names = str(e).partition("did you mean:")
        return [n.strip() for n in names.strip().rstrip("?").split(",") if n.strip()]
    return []


@router.get("/models/{alias}", response_class=HTMLResponse)
async def model_page(request: Request, alias: str):
    from ..model.catalog import find_entry

    if find_entry(alias) is None:
        return page("not_found.html", request, status=404, what=f"catalog model '{alias}'",
                    suggest=[(f"/models/{a}", a) for a in _model_suggestions(alias)])
    facts = await bounded(request, model_facts, alias, read_policy(request))
    return page("model.html", request, alias=alias, **facts, ignored=unknown_names(params(request)[0], ()))


# ------------------------------------------------------------------------------------------ hardware

@router.get("/hardware", response_class=HTMLResponse)
def hardware_index(request: Request):
    from ..hardware.catalog import search_devices
    from .pages import FORM_FACTORS, VENDORS, form_factor, one_of

    one, _ = params(request)
    q, kind, vendor = (one.get(k, "").strip().lower()[:100] for k in ("q", "kind", "vendor"))
    rows, error = [], None
    try:
        # a form factor or vendor the catalog has none of is refused as `runlocal hardware --kind` refuses it (exit 2),
        # not answered "0 devices" under a menu that reads "any" (site23)
        one_of("kind", kind, tuple(FORM_FACTORS))
        one_of("vendor", vendor, VENDORS)
        rows = [d for d in search_devices(q)
                if (not kind or form_factor(d) == kind) and (not vendor or d.vendor == vendor)]
    except RunlocalError as e:
        error = str(e)
    return page("hardware.html", request, status=422 if error else 200, q=q, kind=kind, vendor=vendor, rows=rows,
                error=error, forms=FORM_FACTORS, vendors=VENDORS, ignored=unknown_names(one, ("q", "kind", "vendor")))


@lru_cache(maxsize=256)
def device_fits(device_id: str, shown: int = 12) -> dict[int, list[dict]]:
    """The largest catalog models that run whole (-ngl 999) on the device at 8K and 32K: first those at Q4_K_M or
    a more accurate type, largest first, then — up to ``shown`` rows — those that fit only at a smaller type
    (``degraded``: IQ4_XS, Q3_K_M, Q2_K — fits_here.below_chosen, which `models --fits` ranks by too), largest
    first. The sweep proposes them with its best format each; the rows shown are then planned as `runlocal check`
    plans them, because the sweep's figures are approximations (its decode speed leaves out a vision tower and the
    slow-down near capacity: up to 20 % above check's on an 8 GB card) and a page must say what check says."""
    from ..choose import _settings
    from ..fits_here import below_chosen, models_fitting
    from ..hardware.catalog import find_device
    from ..hardware.targets import targets_from_options
    from ..model.catalog import lookup
    from ..plan import quick_plan
    from ..sweep import SWEEP_QUANTS

    dev = find_device(device_id)
    targets, _ = targets_from_options(dev.id, None, None)
    capacity = sum(t.capacity for t in targets if t.kind != "cpu") or targets[0].capacity
    n_gpus = sum(1 for t in targets if t.kind != "cpu")
    fits: dict[int, list[dict]] = {}
    for ctx in (8192, 32768):
        rows: list[dict] = []
        degraded: list[dict] = []
        # the sweep ranks by Q8_0 bytes (a stand-in for size); the page says "largest" of the parameter count
        proposals = sorted(models_fitting(capacity, ctx), key=lambda r: -lookup(r["alias"]).params)
        for proposed in proposals:
            # the sweep's format is an estimate near capacity: where check's --fit would move weights off at it, the
            # smaller formats are planned in turn before the model is left out
            ladder = SWEEP_QUANTS[SWEEP_QUANTS.index(proposed["quant"]):] \
                if proposed["quant"] in SWEEP_QUANTS else (proposed["quant"],)
            for quant in ladder:
                try:
                    model, settings = lookup(proposed["alias"]), _settings("llama.cpp", ctx, quant, n_gpus)
                    if n_gpus == 1 and _fit_moves_layers(model, settings, targets):
                        continue        # the plan's verdict, known without --fit's layer search: offloaded
                    planned = quick_plan(model, settings, targets)
                except RunlocalError:
                    break
                if planned.verdict in ("fits", "tight") and planned.allocation.compromise is None:
                    busiest = max(planned.allocation.devices, key=lambda d: d.total if d.kind != "cpu" else -1)
                    low = below_chosen(planned.weights.quant, model)
                    (degraded if low else rows).append({
                        "alias": proposed["alias"], "quant": planned.weights.quant, "peak_bytes": busiest.total,
                        "decode_tokens_per_s": planned.speed.get("decode_tokens_per_s"), "degraded": low})
                    break
            if len(rows) == shown:
                break
        fits[ctx] = rows + degraded[:shown - len(rows)]
    return fits


def _fit_moves_layers(model, settings, targets) -> bool:
    """One GPU, the context set: whether llama-server --fit moves layers to system memory, known from its step 1
    alone (common/fit.cpp, LlamaCpp.fit): every layer on the GPU must leave FIT_MARGIN free. Its bytes without a
    compute buffer (LlamaCpp.floor, the lower bound fit() itself skips step 1 with) are over, or its use with them
    (LlamaCpp._gpu_use, what fit() measures) is; then fit() searches the layers and the row is offloaded, which
    quick_plan would say only after that search (common/fit.cpp's false position: most of a cold device page's
    time, review18 #8 and review19 #13). Where step 1 passes, quick_plan's own fit finds the same use kept."""
    from ..plan import estimate
    from ..runtimes import get_runtime
    from ..runtimes.llamacpp import LlamaCpp
    from ..runtimes.llamacpp_layout import FIT_MARGIN
    from ..runtimes.llamacpp_swa import as_llamacpp_loads

    runtime = get_runtime(settings.runtime)
    if not isinstance(runtime, LlamaCpp) or settings.ctx is None or settings.llamacpp.n_gpu_layers is not None:
        return False
    loads, weights = as_llamacpp_loads(model), estimate(model, settings.quant)    # as allocate() hands them to fit()
    asked = runtime._as_build_reads(settings)
    if not asked.llamacpp.fit:
        return False
    whole = asked.with_(n_gpu_layers=loads.n_layers + 1)
    room = next(t for t in targets if t.kind != "cpu").capacity - FIT_MARGIN
    return runtime.floor(loads, weights, whole, targets)[0] > room or \
        runtime._gpu_use(loads, weights, whole, targets)[0] > room


@router.get("/hardware/{device_id}", response_class=HTMLResponse)
async def device_page(request: Request, device_id: str):
    from ..hardware.catalog import load_devices, load_sources

    dev = next((d for d in load_devices() if d.id == device_id), None)
    if dev is None:       # a name every command accepts (h100, 4090, "RTX 4090"): the device's own page
        from fastapi.responses import RedirectResponse

        from ..hardware.catalog import UnknownDeviceError, find_device

        try:
            return RedirectResponse(f"/hardware/{find_device(device_id).id}", status_code=302)
        except (UnknownDeviceError, ValueError):
            return page("not_found.html", request, status=404, what=f"catalog device '{device_id}'")
    fits = await bounded(request, device_fits, dev.id)
    bench = same_device(await stored_rows(request, limit=1000) or [], dev.id)[:50]
    from ..fits_here import DEGRADED_WORDS

    return page("device.html", request, d=dev, source=load_sources().get(dev.source, dev.source), fits=fits,
                bench=bench, ignored=unknown_names(params(request)[0], ()), degraded_words=DEGRADED_WORDS)


# ------------------------------------------------------------------------------------------ benchmarks

@router.get("/benchmarks", response_class=HTMLResponse)
async def benchmarks_index(request: Request):
    one, _ = params(request)
    q = {k: one.get(k, "").strip()[:200] for k in ("device", "model", "runtime")}
    rows = await stored_rows(request, model=q["model"] or None, limit=1000 if q["device"] else 500)
    if rows is not None and q["device"]:
        rows = same_device(rows, q["device"])
    if rows is not None and q["runtime"]:
        rows = [r for r in rows if r.get("runtime") == q["runtime"]]
    return page("benchmarks.html", request, q=q, rows=rows, runtimes=_runtime_names(), catalog=_catalog_lists(),
                ignored=unknown_names(one, q))


async def stored_rows(request: Request, **query: Any) -> list[dict] | None:
    """The store's rows as GET /api/v1/benchmarks lists them (newest first, those naming a model:
    api/benchmarks.listed); None when it cannot be read."""
    from ..api.benchmarks import listed

    store = stored_benchmarks(request)
    if store is None:
        return None
    try:
        return await run_in_threadpool(lambda: listed(store.list(**query)))
    except Exception:       # noqa: BLE001 — a store that is down: the page says it cannot read it
        return None


def same_device(rows: list[dict], device: str) -> list[dict]:
    """The rows measured on ``device`` under any of its names ("NVIDIA GeForce RTX 4090" as nvidia-smi prints
    it is rtx-4090), compared through the hardware catalog as /check compares them (measured.py)."""
    from ..measured import device_key

    key = device_key(device)
    return [r for r in rows if device_key(r.get("device") or "") == key]


SUBMIT_FIELDS = ("device", "runtime", "runtime_version", "model", "quant", "decode_tokens_per_s", "decode_at_context",
                 "prefill_tokens_per_s", "ttft_s", "peak_memory_bytes", "max_context", "max_concurrency", "submitter",
                 "measured_at")
NUMERIC = {"decode_tokens_per_s": float, "prefill_tokens_per_s": float, "ttft_s": float, "peak_memory_bytes": int,
           "max_context": int, "max_concurrency": int, "decode_at_context": int}
IN_SETTINGS = ("decode_at_context",)      # the body's settings object (measured.decode_depth reads it)


@router.get("/benchmarks/submit", response_class=HTMLResponse)
def submit_form(request: Request):
    return page("submit.html", request, values={"runtime": "llama.cpp"}, errors=[], created=None,
                runtimes=_runtime_names(), catalog=_catalog_lists())


@router.post("/benchmarks/submit", response_class=HTMLResponse)
async def submit_post(request: Request):
    """The form's fields → what POST /api/v1/benchmarks stores, through the same function (api/benchmarks.py): the
    API's validation, trust rules and per-address rate limit decide. A submitter token makes it count at once."""
    raw = await request.body()
    fields = parse_qs(raw.decode("utf-8", "replace"))
    values = {k: v[0].strip() for k, v in fields.items() if k in SUBMIT_FIELDS}
    token = (fields.get("token") or [""])[0].strip() or None
    body: dict[str, Any] = {"source": "web"}
    errors = []
    for k, v in values.items():
        if not v:
            continue
        if k in NUMERIC:
            try:
                body[k] = NUMERIC[k](float(v)) if NUMERIC[k] is int else float(v)
            except ValueError:
                errors.append(f"{k}: expected a number, got '{v}'")
                continue
        else:
            body[k] = v
    for k in IN_SETTINGS:
        if k in body:
            body.setdefault("settings", {})[k] = body.pop(k)
    created = None
    submit = getattr(request.app.state, "submit_benchmark", None)
    if not errors and submit is None:
        errors = ["this server has no benchmark store"]
    elif not errors:
        created, errors = await _submitted(submit, body, token, request.client.host if request.client else "?")
    return page("submit.html", request, status=201 if created else 422, values=values, errors=errors,
                created=created, runtimes=_runtime_names(), catalog=_catalog_lists())


async def _submitted(submit, body: dict[str, Any], token: str | None, client: str) -> tuple[dict | None, list[str]]:
    """(row, []) once stored, or (None, the API's error messages, field by field)."""
    from fastapi import HTTPException
    from pydantic import ValidationError

    from ..api.benchmarks import BenchmarkBody

    try:
        parsed = BenchmarkBody.model_validate(body)
        return await run_in_threadpool(submit, parsed, token, client), []
    except ValidationError as e:
        return None, [f"{'.'.join(str(x) for x in d.get('loc', ())) or 'body'}: {d.get('msg')}" for d in e.errors()]
    except HTTPException as e:
        return None, _detail_errors(e.detail, e.status_code)


def _detail_errors(detail: Any, status: int) -> list[str]:
    if isinstance(detail, list):
        out = []
        for d in detail:
            field, msg = ".".join(str(x) for x in d.get("loc", [])[1:]) or "body", str(d.get("msg"))
            out.append(msg if msg.startswith(f"{field}:") else f"{field}: {msg}")     # a message that names its field
        return out
    return [str(detail or f"the API answered {status}")]


# ------------------------------------------------------------------------------------------ reference

@router.get("/methodology", response_class=HTMLResponse)
def methodology(request: Request):
    from .accuracy import saved_tables

    return page("methodology.html", request, tables=saved_tables())


@router.get("/glossary", response_class=HTMLResponse)
def glossary(request: Request):
    return page("glossary.html", request)


@router.get("/api", response_class=HTMLResponse)
def api_page(request: Request):
    """The public API, listed from the app's own OpenAPI document (so it cannot drift from the code)."""
    doc = request.app.openapi()
    endpoints = []
    for path, ops in doc.get("paths", {}).items():
        for method, op in ops.items():
            params_ = [p["name"] + ("" if not p.get("required") else " (required)") for p in op.get("parameters", [])]
            endpoints.append({"method": method.upper(), "path": path, "summary": op.get("summary", ""),
                              "doc": op.get("description", ""), "params": params_,
                              "body": "requestBody" in op})
    # the example names this server as the visitor reached it (scheme, host and port of the request)
    return page("api.html", request, endpoints=endpoints, api_title=doc["info"]["title"],
                api_version=doc["info"]["version"], base=str(request.base_url).rstrip("/"))
