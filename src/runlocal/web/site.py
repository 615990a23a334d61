"""The site: server-rendered pages on the same app as the JSON API (`runlocal serve`).

Every page is a GET whose whole state is its query string, rendered by Jinja2 from the same planning
calls the CLI makes (runlocal.check.check, choose.best, compare.compare_devices, choose.cost, the errors
KB), each reading a model reference under the app's one ReadPolicy (``read_policy``: the API's, so a page
reads no path or URL the API refuses); charts are SVG drawn here (charts.py). /static/site.js only enhances:
it submits the forms in place, shows a loading state and copies commands. Benchmarks are read from the app's
store and written through the function POST /api/v1/benchmarks uses (api/benchmarks.add_benchmark),
in-process and without an HTTP hop, so the store's trust rules and rate limit apply to the form as to any
client.

``mount_site(app)`` is the one line the app needs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response

from ..errors import RunlocalError
from . import forms

router = APIRouter(include_in_schema=False)
PAGE_HEADERS = {"Cache-Control": "no-cache"}


@lru_cache(maxsize=1)
def templates():
    from jinja2 import Environment, PackageLoader, select_autoescape

    from ..units import format_bytes, format_count

    env = Environment(loader=PackageLoader("runlocal.web", "templates"), autoescape=select_autoescape(),
                      trim_blocks=True, lstrip_blocks=True)
    def number(n) -> bool:        # a missing figure (None, or a key a row does not have) prints as "—"
        return isinstance(n, (int, float)) and not isinstance(n, bool)

    env.filters["bytes"] = lambda n: format_bytes(n) if number(n) else "—"
    env.filters["count"] = lambda n: format_count(n) if number(n) else "—"
    env.filters["num"] = lambda n, d=0: f"{n:,.{d}f}" if number(n) else "—"
    env.filters["usd"] = lambda n: f"${n:,.0f}" if number(n) else "—"
    env.globals["qs"] = lambda q: urlencode({k: v for k, v in q.items() if v not in ("", None)}, doseq=True)
    env.globals["request_qs"] = request_query
    env.globals["check_link"] = check_link
    env.filters["setup"] = device_summary
    env.filters["as_form"] = form_words
    env.filters["kv_where"] = _kv_where
    env.filters["requests_at_once"] = _requests_at_once
    env.filters["ram_condition"] = _ram_condition
    env.filters["weights_held"] = _weights_held
    return env


def request_query(req) -> str:
    """A CheckRequest as a query string (request.query_pairs: the contract's names, every setting it carries)."""
    from ..request import query_pairs

    return urlencode(query_pairs(req))


def check_link(**settings: Any) -> str:
    """The check page for these request fields ("gpu": "2x3090", "n_gpu_layers": 999 …), written by the one function
    that writes the API's query (the page reads the contract's names: forms.FORM_FIELDS); "" and None are unset."""
    from ..request import CheckRequest

    return "/?" + request_query(CheckRequest(**{k: v for k, v in settings.items() if v not in ("", None)}))


# check's conditions name the CLI's flags; the page names its own fields (the words are otherwise check's own)
FORM_WORDS = (("set --ram to", "set System RAM to"), ("--gpu auto plans", "`runlocal check --gpu auto` plans"))


def form_words(condition: str) -> str:
    for flag, field in FORM_WORDS:
        condition = condition.replace(flag, field)
    return condition


def device_summary(devices) -> str:
    """"2 × NVIDIA GeForce RTX 3090 + CPU RAM": the devices a plan ran on, like ones counted."""
    from collections import Counter

    counts = Counter(d.name for d in devices if d.kind != "cpu" or len(devices) == 1)
    return " + ".join(f"{n} × {name}" if n > 1 else name for name, n in counts.items())


def page(name: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
    from .. import __version__

    html = templates().get_template(name).render(request=request, path=request.url.path, version=__version__,
                                                 **context)
    return HTMLResponse(html, status_code=status, headers=PAGE_HEADERS)


def read_policy(request: Request):
    """What a model reference on any page may make the server read: the app's ReadPolicy, the object the API's
    endpoints read under (api/app.create_app puts it on app.state); without one, the public server's default
    (aliases and Hub repo ids, no local path, no URL), never the CLI's read-everything."""
    from ..model.policy import ReadPolicy

    policy = getattr(request.app.state, "read_policy", None)
    return policy if isinstance(policy, ReadPolicy) else ReadPolicy.server()


def params(request: Request, lists: tuple[str, ...] = ()) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The query: (each name's value, each name's values). A name given twice that is not one of the page's
    ``lists`` (the check page's device rows gpu / n, Compare's d) is refused with 422, naming it — not read
    last-one-wins, as /api/v1 refuses it (api/errors.known_query_only)."""
    from starlette.exceptions import HTTPException as StarletteHTTPException

    q = request.query_params
    repeated = [k for k in dict.fromkeys(q.keys()) if k not in lists and len(q.getlist(k)) > 1]
    if repeated:
        raise StarletteHTTPException(422, "; ".join(
            f"{k}: given {len(q.getlist(k))} times ({', '.join(v[:40] for v in q.getlist(k))}); expected one value"
            for k in repeated))
    return {k: q[k] for k in q}, {k: q.getlist(k) for k in q}


def error_line(err: RunlocalError, renames: dict[str, str] | None = None) -> str:
    """The error box's line, starting with the form field it is about: the library's message where it names one
    (``ctx: 'abc' is not a token count …``), else the error's field (errors.UnknownNameError.field: ``model``,
    ``gpu``; ``renames`` maps it to the page's own field, Compare's ``d``) before it — ``unknown model 'x'`` alone
    named no field (site23), where MCP's tools and the API's ``loc`` name it."""
    message = str(err)
    head, sep, _ = message.partition(":")
    if sep and head.strip() and " " not in head.strip():
        return message
    field = (renames or {}).get(err.field or "", err.field)
    return f"{field}: {message}" if field else message


def unknown_names(one: dict[str, str], known) -> list[str]:
    """The query's names a page does not read (shown in an "Ignored" notice, review19 #6: never planned as the
    default without a word)."""
    return [k for k in one if k not in known]


async def bounded(request: Request, fn, *args: Any) -> Any:
    """``fn(*args)`` on the app's planning pool (api/limits.py), as the API plans: at most --plan-workers at once,
    limits.Busy (a "still computing" page, 503) past --plan-deadline or when every planner is busy. A retry of the
    same call joins the one still running instead of starting another; the functions' own caches keep the answer."""
    pool = getattr(request.app.state, "planning_pool", None)
    if pool is None:
        return await run_in_threadpool(fn, *args)
    return await pool.run(fn, *args, key=f"site:{fn.__module__}.{fn.__qualname__}{args!r}")


def busy_page(request: Request, err: Exception, retry_after: int) -> HTMLResponse:
    """A page's answer when its work outran the deadline or found every planner busy: 503, Retry-After, and (for a
    GET) a page that asks again by itself."""
    again = str(request.url.path) + (f"?{request.url.query}" if request.url.query else "") \
        if request.method == "GET" else None
    response = page("busy.html", request, status=503, why=str(err).rstrip("."), retry_after=retry_after, again=again)
    response.headers["Retry-After"] = str(retry_after)
    return response


# ------------------------------------------------------------------------------------ Will it run?

HOST_SHOWN_SHARE = 0.10                               # the host's RAM is charted when it holds more than this


def _planned(req, policy) -> tuple[Any, list[str], Any]:
    """(plan, notes, chart series) for a request read under ``policy``; plans of catalog models are pure, so
    cached by request and policy (as /api/v1/check caches its plans per app)."""
    import json
    from dataclasses import asdict

    return _planned_by_key(json.dumps(asdict(req), sort_keys=True, default=list), policy)


@lru_cache(maxsize=512)
def _planned_by_key(key: str, policy) -> tuple[Any, list[str], Any]:
    import json

    from ..check import CheckRequest, check
    from ..hardware.targets import targets_from_options

    fields = json.loads(key)
    fields["override_tensor"] = tuple(fields.get("override_tensor") or ())
    req = CheckRequest(**{**fields, "use_measurements": False})
    plan, notes = check(req, policy)
    targets, _ = targets_from_options(req.gpu, req.vram, req.ram)
    return plan, notes, device_curves(plan, targets)


def device_curves(plan, targets) -> list:
    """The chart's series: plan.context_curves (what /api/v1/curve answers: the plan at each context as its largest
    context was searched), one line per device, each with its limit dashed."""
    from ..plan import context_curves, curve_contexts
    from .charts import Series

    curves = context_curves(plan, targets, curve_contexts(plan))
    has_gpu = any(c["kind"] != "cpu" for c in curves)
    series, seen = [], set()
    for c in curves:
        peak = max((p["total"] for p in c["points"]), default=0)
        if c["capacity"] <= 0 or not peak:
            continue
        if has_gpu and c["kind"] == "cpu" and peak < HOST_SHOWN_SHARE * c["capacity"]:
            continue      # the host holding a few buffers would only squash the GPUs' lines (listed in the bars)
        same = sum(1 for e in curves if e["device"] == c["device"] and e["capacity"] == c["capacity"])
        key = (c["device"], c["capacity"])
        limit = c["limit"] if key not in seen else None       # one limit line per kind of device
        seen.add(key)
        label = f"{same} × {c['device']} (each)" if same > 1 else c["device"]
        series.append(Series(label, tuple((p["ctx"], p["total"]) for p in c["points"]), limit,
                             kept=c["capacity"] - c["limit"]))
    return series


def _with_store(request: Request, plan):
    """The plan with the server's stored measurements applied, as /api/v1/check applies them (the same store,
    the same functions)."""
    from ..measured import apply_measurements, store_records

    store = stored_benchmarks(request)
    return apply_measurements(plan, store_records(store, plan)) if store is not None else plan


def _kv_where(plan) -> str:
    """The KV-per-token figure's reach, as the CLI says it: one rank's under TP / PP (plan.kv_where)."""
    from ..plan import kv_where

    return kv_where(plan)


def _ram_condition(plan) -> str:
    """The verdict's " if RAM ≥ N GiB", as the CLI's verdict line ends (plan.ram_condition)."""
    from ..plan import ram_condition

    return ram_condition(plan)


def _weights_held(plan) -> tuple[str, int]:
    """The weights' words and bytes as the runtime holds them, as the CLI's header says (plan.weights_held)."""
    from ..plan import weights_held

    return weights_held(plan)


def _requests_at_once(plan) -> dict | None:
    """Requests at once, the figure and words the CLI prints (plan.requests_at_once)."""
    from ..plan import requests_at_once

    return requests_at_once(plan)


def stored_benchmarks(request: Request):
    """The app's benchmark store (api/app.py), read in-process: no HTTP hop, whose Host the Host check refuses."""
    return getattr(request.app.state, "benchmark_store", None)


@router.get("/", response_class=HTMLResponse)
async def check_page(request: Request):
    one, multi = params(request, lists=("gpu", "n"))
    form, plan, error, req = forms.CheckForm(), None, None, None
    notes: list[str] = []
    series: list = []
    try:
        form = forms.read_check_form(one, multi)
        req = forms.check_request(form)
        plan, notes, series = await bounded(request, _planned, req, read_policy(request))
        plan = await run_in_threadpool(_with_store, request, plan)
    except RunlocalError as e:
        error = error_line(e)
    chart, drawn = None, ""
    if plan is not None and series:
        from ..plan import curve_words

        drawn = curve_words(plan)
        from .charts import memory_chart

        chart = memory_chart(series, marked_ctx=plan.max_context, asked_ctx=plan.settings.ctx,
                             title=f"Memory on each device against context: {plan.model.id}, {plan.runtime}, "
                                   f"{plan.weights.quant}")
    return page("check.html", request, status=200 if error is None else 422, form=form, plan=plan, notes=notes,
                chart=chart, drawn=drawn, error=error, check_req=req, device_rows=_device_rows(form), catalog=_catalog_lists(),
                options=form.options, runtimes=_runtime_names(), labels=forms,
                model_default=forms.model_default_quant(plan), speed=_speed(plan) if plan else None)


def _device_rows(form: forms.CheckForm) -> list[tuple[str, int]]:
    rows = list(form.devices)
    if len(rows) < forms.MAX_DEVICE_ROWS:
        rows.append(("", 1))           # one empty row to add a device (JS adds more in place)
    return rows


def _speed(plan) -> dict[str, Any]:
    """Decode and prefill, each said measured (the median of the stored records that match, with the
    prediction beside it) or predicted: a record may carry one figure and not the other."""
    s, m = plan.speed, plan.measured or {}
    predicted = (m.get("predicted") or {}).get("speed") or s
    out: dict[str, Any] = {"records": m.get("records")}
    # which runs, when and on what, as the CLI's speed line says them (render/text.py): the first five ids, the
    # latest run's date, the device the records name
    out["ids"] = ", ".join(str(i) for i in (m.get("ids") or [])[:5])
    out["latest"] = str(m.get("latest") or "?")[:10]
    out["device"] = m.get("device")
    for name in ("decode", "prefill"):
        key = f"{name}_tokens_per_s"
        out[name] = s.get(key)
        out[f"{name}_measured"] = bool(m.get(key))
        out[f"{name}_predicted"] = predicted.get(key)
    # decode depends on the KV cache's depth: the measured figure's (None: its records do not say), the prediction's
    out["decode_records"] = m.get("decode_records", out["records"])
    out["decode_measured_at"] = m.get("decode_at_context")
    out["decode_predicted_at"] = predicted.get("decode_at_context")
    return out


@lru_cache(maxsize=1)
def _runtime_names() -> list[str]:
    from ..runtimes import runtime_names

    return runtime_names()


@lru_cache(maxsize=1)
def _catalog_lists() -> dict[str, list]:
    """The suggestion lists: catalog models and devices (every name is also typed freely)."""
    from ..hardware.catalog import load_devices
    from ..model import catalog

    models = [(e["alias"], e["repo_id"]) for e in catalog.load_entries()]
    devices = [(d.id, f"{d.name} · {d.memory_gib:g} GiB") for d in load_devices()]
    return {"models": models, "devices": devices}


# ------------------------------------------------------------------------------------ the app

def mount_site(app: FastAPI) -> None:
    """Adds the pages, /static and the offline /docs and /redoc to ``app`` (call before the app's own "/")."""
    from . import directory, pages

    app.include_router(router)
    app.include_router(pages.router)
    app.include_router(directory.router)
    _offline_docs(app)
    _busy_pages(app)
    _site_errors(app)
    app.router.on_startup.append(_warm_up)


def is_api_path(path: str) -> bool:
    """The JSON API's paths (its errors answer JSON); every other path is the site's (its errors answer pages)."""
    return path.startswith("/api/") or path == "/openapi.json"


def _site_errors(app: FastAPI) -> None:
    """A mistyped site URL (no route: 404, or a method the page does not take: 405) or a query a page refuses (422:
    a parameter given twice) answers a page with the site's navigation; the API's paths keep FastAPI's JSON answer."""
    from fastapi.exception_handlers import http_exception_handler
    from starlette.exceptions import HTTPException as StarletteHTTPException

    async def not_a_page(request: Request, err: Exception):
        assert isinstance(err, StarletteHTTPException)
        if is_api_path(request.url.path) or err.status_code not in (404, 405, 422):
            return await http_exception_handler(request, err)
        if err.status_code == 422:         # a query params() refuses (a parameter given twice): the page says which
            return page("not_found.html", request, status=422, title="Bad request", what=None,
                        message=f"{err.detail}.")
        what = f"page at {request.url.path}" if err.status_code == 404 else \
            f"{request.method} answer at {request.url.path} (this page answers GET)"
        response = page("not_found.html", request, status=err.status_code, what=what)
        response.headers.update(err.headers or {})          # 405: Allow
        return response

    app.add_exception_handler(StarletteHTTPException, not_a_page)


def too_large_page(scope, sent: int | None, limit: int) -> HTMLResponse:
    """A site form's body over the server's cap (api/app.BodyCap answers before the page reads it): 413 with the
    limit said; the diagnosis form comes back, empty, with the message where its answer would be."""
    request = Request(scope)
    size = f" (the form sent {sent:,} bytes)" if sent is not None else ""
    message = (f"text: the pasted log is over this server's limit of {limit:,} bytes ({limit // 1024} KiB) a "
               f"request{size}; paste the lines around the error, or run `runlocal diagnose FILE` on your machine, "
               "which reads the whole log")
    if scope["path"] == "/errors/diagnose":
        return page("diagnose.html", request, status=413, text="", runtime="", result=None, error=message,
                    runtimes=_runtime_names())
    return page("not_found.html", request, status=413, title="Request too large",
                what=None, message=f"This server reads at most {limit:,} bytes ({limit // 1024} KiB) a request{size}.")


def _busy_pages(app: FastAPI) -> None:
    """limits.Busy on a page answers the "still computing" page; on /api/ the API's own JSON 503 (api/errors.py)."""
    import inspect

    from ..api.limits import Busy

    api_answer = app.exception_handlers.get(Busy)

    async def busy(request: Request, err: Exception):
        if request.url.path.startswith("/api/") and api_answer is not None:
            answer = api_answer(request, err)
            return await answer if inspect.isawaitable(answer) else answer
        return busy_page(request, err, getattr(err, "retry_after", 5))

    app.add_exception_handler(Busy, busy)


async def _warm_up() -> None:
    """warm_caches, in the background, when the server starts (the guides too with RUNLOCAL_SITE_WARM_GUIDES=1, a
    public site's setting; off by default so that the benchmarks and tests that start `runlocal serve` do not share
    their cores with them)."""
    import os
    import threading

    guides = os.environ.get("RUNLOCAL_SITE_WARM_GUIDES") == "1"
    threading.Thread(target=warm_caches, args=(guides,), name="runlocal-site-warm-up", daemon=True).start()


def warm_caches(guides: bool = False) -> None:
    """What a started server computes before its first visitor: the catalog sweep's memory lines (Compare, the hardware
    pages and a guide read them; the first fit takes seconds), every page template compiled (0.16 s of CPU in all,
    which each page's first visitor paid for its template: benchmarks/pages.py), and with ``guides`` the guides,
    cheapest first (about a minute of CPU on two cores, the Ollama guide most of it)."""
    import gc

    from ..sweep import catalog_lines
    from .pages import GUIDES, guide_data

    catalog_lines("llama.cpp")
    env = templates()
    for name in env.list_templates():
        env.get_template(name)
    if guides:
        for slug in sorted(GUIDES, key=lambda g: g == "best-gpu-for-ollama"):
            guide_data(slug)
    # what the warm-up built (catalogs, memos, the guides) lives as long as the server: a full collection now
    # and out of the collector's generations after, so no visitor's request pays a long gen-2 pass over it
    gc.collect()
    gc.freeze()


def _offline_docs(app: FastAPI) -> None:
    """Swagger UI and ReDoc from the assets fastapi-offline ships, instead of FastAPI's CDN links."""
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html

    app.router.routes = [r for r in app.router.routes if getattr(r, "path", None) not in ("/docs", "/redoc")]
    title = app.title

    @app.get("/docs", include_in_schema=False)
    def swagger_ui():
        return _same_origin(get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{title} — Swagger UI",
                                   swagger_js_url="/static/vendor/swagger-ui-bundle.js",
                                   swagger_css_url="/static/vendor/swagger-ui.css",
                                   swagger_favicon_url="/static/favicon.svg",
                                   swagger_ui_parameters={"validatorUrl": None}))

    @app.get("/redoc", include_in_schema=False)
    def redoc():
        return _same_origin(get_redoc_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{title} — ReDoc",
                              redoc_js_url="/static/vendor/redoc.standalone.js",
                              redoc_favicon_url="/static/favicon.svg", with_google_fonts=False))


# ReDoc's sidebar credit loads its logo from the vendor's CDN: the browser is told to fetch nothing from
# anywhere but this server, so the explorers work offline and leak no request.
SAME_ORIGIN_CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                   "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; font-src 'self' data:")


def _same_origin(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = SAME_ORIGIN_CSP
    return response


STATIC_TYPES = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml", "png": "image/png"}


@router.get("/static/{name}")
def static(name: str):
    return _asset(("runlocal.web", "static"), name)


@router.get("/static/vendor/{name}")
def vendor(name: str):
    """Swagger UI and ReDoc, from the fastapi-offline package (MIT; the assets keep their own licences)."""
    return _asset(("fastapi_offline", "static"), name)


def _asset(where: tuple[str, str], name: str) -> Response:
    import re
    from importlib import resources

    if not re.fullmatch(r"[a-z0-9_.-]+\.(js|css|svg|png)", name) or ".." in name:
        return Response(status_code=404)
    try:
        path = resources.files(where[0]).joinpath(f"{where[1]}/{name}")
    except ModuleNotFoundError:
        return Response(status_code=404)
    if not path.is_file():
        return Response(status_code=404)
    return Response(path.read_bytes(), media_type=STATIC_TYPES[name.rsplit(".", 1)[1]],
                    headers={"Cache-Control": "public, max-age=3600"})

