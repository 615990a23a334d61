"""The FastAPI app: versioned JSON endpoints returning the same objects as the CLI's --json,
the "Will it run?" page, and the benchmark store.

Safe to expose: model references resolve under the server's ReadPolicy (model/policy.py: aliases and Hub repo
ids unless the operator allows a folder or hosts); planning runs in a bounded pool with a deadline
(api/limits.py); one handler turns the errors.py tree into status codes naming the field (api/errors.py).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from dataclasses import asdict
from functools import lru_cache
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import config
from ..errors import InputError
from ..model.policy import ReadPolicy
from .benchmarks import BenchmarkBody, add_benchmark, benchmarks_router
from .errors import ERROR_RESPONSES, install_error_handlers, known_query_only
from .limits import PlanningPool, RateLimiter, SecurityHeaders
from .schemas import (
    MAX_MODEL,
    BestDoc,
    BudgetQuery,
    CheckBody,
    CompareDoc,
    CostDoc,
    CurveDoc,
    DeviceDoc,
    DiagnosisDoc,
    ErrorEntryDoc,
    FitsDoc,
    FormQuery,
    HoursQuery,
    KwhQuery,
    ModelEntry,
    ModelQuery,
    ModelsQuery,
    PlanDoc,
    PriceQuery,
    QuantQuery,
    RamQuery,
    RentQuery,
    RuntimeQuery,
    TokensQuery,
    UsersQuery,
    UtilizationQuery,
    VendorQuery,
    YearsQuery,
    to_request,
)
from .store import BenchmarkStore

MAX_BODY = 256 * 1024
STORE_VERSION_TTL_S = 1.0


class DiagnoseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=MAX_BODY)
    runtime: str | None = Field(None, max_length=40)

    @field_validator("text")
    @classmethod
    def _has_text(cls, text: str) -> str:
        if not text.strip():  # blank lines only: nothing to diagnose (as the CLI and the web form say)
            raise ValueError("the text is empty; paste the error message or the log lines around it")
        return text


class BodyCap:
    """Refuses request bodies over ``limit`` bytes with 413, whether or not Content-Length is sent.

    Plain ASGI rather than @app.middleware("http"): Starlette's BaseHTTPMiddleware wraps every
    response in a stream, which costs the load target (benchmarks/load.py) a third of its throughput."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    def refusal(self, scope, sent: int | None) -> Response:
        """The API's JSON 413; a site form's is a page that says the limit (web/site.too_large_page)."""
        from ..web.site import is_api_path, too_large_page

        if is_api_path(scope["path"]):
            return JSONResponse({"detail": f"request body over {self.limit} bytes"}, status_code=413)
        return too_large_page(scope, sent, self.limit)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        sent = int(length) if length is not None and length.isdigit() else None
        if length is not None and (sent is None or sent > self.limit):
            return await self.refusal(scope, sent)(scope, receive, send)
        if length is not None or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        # no Content-Length (chunked): read up to the limit here, then replay it to the app
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.limit:
                return await self.refusal(scope, None)(scope, receive, send)
        pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay():
            return pending.pop() if pending else await receive()     # then http.disconnect, as usual

        await self.app(scope, replay, send)


class Shortcut:
    """Lets ``handler`` answer GET requests for ``path`` before routing (or pass them on)."""

    def __init__(self, app, path: str, handler):
        self.app, self.path, self.handler = app, path, handler

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == self.path:
            return await self.handler(scope, receive, send, self.app)
        return await self.app(scope, receive, send)


class _CheckAnswers:
    """/check's answers. Plans are pure functions of the request for catalog models: cached by request (the stored
    measurements, which change, are applied per request). Per app: the cache holds what this app's policy allowed
    it to read; errors are raised, so never cached. Rendered answers are reused while the benchmark store is
    unchanged (its version is read at most once a second, since other processes may write to a shared store):
    the load target (benchmarks/load.py) leaves no time to query the store and re-encode the plan on every
    request."""

    def __init__(self, store: BenchmarkStore, policy: ReadPolicy, pool: PlanningPool) -> None:
        self.store, self.pool = store, pool
        self.rendered: OrderedDict[str, tuple[Any, bytes]] = OrderedDict()
        self.lock = threading.Lock()
        self.version_seen: dict[str, Any] = {"at": -1.0, "version": None}

        @lru_cache(maxsize=2048)
        def cached_check(body_json: str):
            from ..check import check

            return check(to_request(CheckBody.model_validate_json(body_json)), policy)

        self.cached_check = cached_check

    def store_changed(self) -> None:
        """This process's own write is seen by the next check."""
        self.version_seen.update(at=-1.0)

    def store_version(self):
        now = time.monotonic()
        if now - self.version_seen["at"] > STORE_VERSION_TTL_S:
            self.version_seen["version"], self.version_seen["at"] = self.store.version(), now
        return self.version_seen["version"]

    def render(self, key: str) -> bytes:
        from ..check import check_document
        from ..measured import apply_measurements, store_records

        plan, notes = self.cached_check(key)
        version = self.store_version()
        doc = check_document(apply_measurements(plan, store_records(self.store, plan)), notes)
        data = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
        with self.lock:
            self.rendered[key] = (version, data)
            if len(self.rendered) > 2048:
                self.rendered.popitem(last=False)
        return data

    async def checked(self, body: BaseModel, raw_key: str | None = None) -> Response:
        key = body.model_dump_json()
        hit = self.rendered.get(key)
        if hit is None or hit[0] != self.store_version():
            hit = (None, await self.pool.run(self.render, key, key=key))   # CPU work: bounded, off the loop, shared
        if raw_key is not None:
            with self.lock:
                self.rendered[raw_key] = (self.store_version(), hit[1])
        return Response(hit[1], media_type="application/json")

    async def cached_get(self, scope, receive, send, call_next):
        """GET /api/v1/check answered from the cache by its raw query string, before any parsing."""
        hit = self.rendered.get("GET?" + scope["query_string"].decode("latin-1"))
        if hit is not None and hit[0] == self.store_version():
            return await Response(hit[1], media_type="application/json")(scope, receive, send)
        return await call_next(scope, receive, send)


def create_app(*, store_url: str | None = None, admin_token: str | None = None,
               cors_origins: list[str] | None = None, policy: ReadPolicy | None = None,
               allowed_hosts: list[str] | None = None, plan_workers: int = 2, plan_deadline_s: float = 20.0,
               plan_queue_wait_s: float = 1.0, writes_per_minute: float = 30.0,
               submitter_tokens: list[str] | None = None) -> FastAPI:
    """The app. ``policy``: what model references may make the server read (default: aliases and Hub repo ids
    only, no HF_TOKEN); ``allowed_hosts``: Host headers accepted (None: any, for tests and behind a proxy that
    checks them); planning: ``plan_workers`` at once, each answered 503 after ``plan_deadline_s``."""
    from .. import __version__

    app = FastAPI(title="runlocal", version=__version__,
                  description="Will this LLM run here? Memory, verdict, limits and fixes per runtime.")
    bench_store = BenchmarkStore(store_url or config.store_url())      # the schema is created here, at start-up
    token = admin_token if admin_token is not None else config.admin_token()
    origins = cors_origins if cors_origins is not None else config.cors_origins()
    policy = policy if policy is not None else ReadPolicy.server()
    pool = PlanningPool(workers=plan_workers, deadline_s=plan_deadline_s, queue_wait_s=plan_queue_wait_s)
    app.state.planning_pool = pool      # the site's pages plan through it too (bounded; the collector frozen after)
    app.state.read_policy = policy      # and read model references under this one policy (web/site.read_policy)
    writes = RateLimiter(per_minute=writes_per_minute, burst=max(1, int(writes_per_minute // 3)))
    install_error_handlers(app, renames={"/api/v1/compare": {"gpu": "devices"}})

    def limit_writes(client: str) -> None:
        wait = writes.allow(client)
        if wait:
            raise HTTPException(status_code=429, detail="too many writes from this address; retry later",
                                headers={"Retry-After": str(max(1, round(wait)))})

    def write_limit(request: Request) -> None:
        """Write endpoints: a token bucket per client address (api/limits.py)."""
        limit_writes(request.client.host if request.client else "?")

    app.add_middleware(BodyCap, limit=MAX_BODY)
    answers = _CheckAnswers(bench_store, policy, pool)
    app.add_middleware(Shortcut, path="/api/v1/check", handler=answers.cached_get)
    submitters = tuple(config.submitter_tokens() if submitter_tokens is None else submitter_tokens)
    known_query = [Depends(known_query_only)]      # every endpoint: an undeclared query parameter is a 422
    app.include_router(benchmarks_router(bench_store, admin_token=token, submitter_tokens=submitters,
                                         on_change=answers.store_changed, write_limit=write_limit),
                       dependencies=known_query)

    def site_submit(body: BenchmarkBody, submitter_token: str | None, client: str) -> dict[str, Any]:
        """The site's submit form: POST /api/v1/benchmarks's rules and rate limit, for the visitor's own address."""
        limit_writes(client)
        row, _ = add_benchmark(bench_store, body, token=submitter_token, admin_token=token, submitters=submitters)
        answers.store_changed()
        return row

    # the site reads and writes the store directly, not over HTTP: an in-process request would carry a Host of its
    # own, which the Host check refuses, and every visitor's submission the one client address 127.0.0.1
    app.state.benchmark_store = bench_store
    app.state.submit_benchmark = site_submit
    app.include_router(_planning_router(answers, pool, policy), dependencies=known_query)
    app.include_router(_catalog_router(pool), dependencies=known_query)
    from ..web.site import mount_site

    mount_site(app)      # the site's pages, /static and the offline /docs and /redoc

    if origins:   # added last, so outermost: its headers go on cached answers too
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST"], allow_headers=["*"])
    if allowed_hosts:   # DNS rebinding: a page on another name reaching a loopback server is refused (400)
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    app.add_middleware(SecurityHeaders)      # outermost: on every answer, refusals included
    return app


def _planning_router(answers: _CheckAnswers, pool: PlanningPool, policy: ReadPolicy) -> APIRouter:
    """The endpoints that plan: bounded by the planning pool, answered 503 past its deadline."""
    router = APIRouter()
    planned: dict[str, Any] = {"responses": ERROR_RESPONSES}

    @router.post("/api/v1/check", response_model=PlanDoc, **planned)
    async def post_check(body: CheckBody):
        """Will the model run with these settings? The same object as `runlocal check --json`."""
        return await answers.checked(body)

    @router.get("/api/v1/check", response_model=PlanDoc, **planned)
    async def get_check(request: Request, query: Annotated[CheckBody, Query()]):
        """POST /api/v1/check's fields as query parameters (the same model, the same bounds)."""
        return await answers.checked(query, raw_key="GET?" + request.url.query)

    def plan_curve(body: BaseModel) -> dict:
        from ..check import curve

        return curve(to_request(body), policy=policy)

    @router.post("/api/v1/curve", response_model=CurveDoc, **planned)
    async def post_curve(body: CheckBody):
        """Memory against context for the page's chart."""
        return await pool.run(plan_curve, body)

    @router.get("/api/v1/curve", response_model=CurveDoc, **planned)
    async def get_curve(query: Annotated[CheckBody, Query()]):
        """POST /api/v1/curve's fields as query parameters."""
        return await pool.run(plan_curve, query)

    # compare and best are pure functions of their query for this app's policy, as /check's plans are: each answer
    # is made once (seconds for a large model) and kept; an error is raised, so never kept
    @lru_cache(maxsize=256)
    def compare_answer(devices: tuple[str, ...], model, ctx, runtime, quant, used, ram):
        from ..compare import compare_devices

        return compare_devices(list(devices), model=model, ctx=ctx, runtime=runtime, quant=quant, used=used,
                               policy=policy, ram=ram)

    @lru_cache(maxsize=256)
    def best_answer(model, ctx, runtime, budget, used, quant, users, best_quant_each, vendor, form):
        from ..shopping import best_for

        return best_for(model, policy=policy, vendor=vendor, form=form, ctx=ctx, runtime=runtime, budget_usd=budget,
                        used=used, quant=quant, users=users, best_quant_each=best_quant_each)

    @router.get("/api/v1/compare", response_model=list[CompareDoc], **planned)
    async def compare(devices: Annotated[str, Query(min_length=1, max_length=1000)], model: ModelQuery = None,
                      ctx: TokensQuery = None, runtime: RuntimeQuery = None, quant: QuantQuery = None,
                      used: bool = False, ram: RamQuery = None):
        """Devices side by side (comma-separated: catalog names, 2x3090, VRAM figures such as 20G), with MODEL's
        plan on each as `check` makes it."""
        names = tuple(d for d in devices.split(",") if d.strip())
        args = (names, model, ctx, runtime, quant, used, ram)
        return await pool.run(compare_answer, *args, key=f"compare{args!r}")     # a retry joins the one running

    @router.get("/api/v1/best", response_model=BestDoc, **planned)
    async def best(model: Annotated[str, Query(min_length=1, max_length=MAX_MODEL)], ctx: TokensQuery = None,
                   runtime: RuntimeQuery = None,
                   budget: BudgetQuery = None,
                   used: bool = False, quant: QuantQuery = None,
                   users: UsersQuery = 1,
                   best_quant_each: bool = False, vendor: VendorQuery = None, form: FormQuery = None):
        """The same object as `runlocal best --json`; MODEL may be a size ("30B": the catalog model nearest it)."""
        args = (model, ctx, runtime, budget, used, quant, users, best_quant_each, vendor, form)
        return await pool.run(best_answer, *args, key=f"best{args!r}")

    _cost_endpoint(router, pool, policy)
    _diagnose_endpoint(router, pool, policy)
    return router


def _diagnose_endpoint(router: APIRouter, pool: PlanningPool, policy: ReadPolicy) -> None:
    def run_diagnose(text: str, runtime: str | None) -> dict:
        from ..diagnose.fixes import with_computed_fixes
        from ..diagnose.reading import diagnose_text

        # a pasted log names a model (vLLM's model='…', llama.cpp's "loading model from …"): its re-plan reads it
        # under this server's policy, as a model named in a query would be
        return with_computed_fixes(diagnose_text(text, runtime=runtime), runtime, policy=policy)

    @router.post("/api/v1/diagnose", response_model=DiagnosisDoc, responses=ERROR_RESPONSES)
    async def diagnose(body: DiagnoseBody):
        """Name the failure in a pasted log; its computed fixes plan, so it shares the planners' bounds."""
        return await pool.run(run_diagnose, body.text, body.runtime)


def _cost_endpoint(router: APIRouter, pool: PlanningPool, policy: ReadPolicy) -> None:
    """GET /api/v1/cost: `runlocal cost --json` (shopping.cost_for), its options as query parameters under the
    MCP tool's names, each amount bounded as amounts.COST_BOUNDS bounds it for every caller."""
    from ..choose import DEFAULT_HOURS_PER_DAY, DEFAULT_KWH_PRICE, DEFAULT_UTILIZATION, DEFAULT_YEARS

    @lru_cache(maxsize=256)
    def cost_answer(model, gpu, options: tuple) -> dict:
        from ..shopping import cost_for

        return cost_for(model, gpu, policy=policy, **dict(options))

    @router.get("/api/v1/cost", response_model=CostDoc, responses=ERROR_RESPONSES)
    async def cost(model: Annotated[str, Query(min_length=1, max_length=MAX_MODEL)],
                   gpu: Annotated[str, Query(min_length=1, max_length=200, description="N of one catalog device")],
                   hours_per_day: HoursQuery = DEFAULT_HOURS_PER_DAY, kwh_price: KwhQuery = DEFAULT_KWH_PRICE,
                   years: YearsQuery = DEFAULT_YEARS, utilization: UtilizationQuery = DEFAULT_UTILIZATION,
                   used: bool = False, price: PriceQuery = None, rent_price: RentQuery = None,
                   ctx: TokensQuery = None, runtime: RuntimeQuery = None, quant: QuantQuery = None):
        """Owning the GPU(s) against renting them by the hour: the same object as `runlocal cost --json`."""
        options = (("ctx", ctx), ("runtime", runtime), ("quant", quant), ("hours_per_day", hours_per_day),
                   ("kwh_price", kwh_price), ("years", years), ("utilization", utilization), ("used", used),
                   ("price_usd", price), ("rent_usd_per_hour", rent_price))
        return await pool.run(cost_answer, model, gpu, options, key=f"cost{(model, gpu, options)!r}")


def _catalog_router(pool: PlanningPool) -> APIRouter:
    """The catalogs: runtimes, models, devices, the errors knowledge base."""
    router = APIRouter()

    @lru_cache(maxsize=256)
    def fitting(request) -> dict:
        """A named machine's list is a pure function of the request (the sweep over the catalog): made once; "auto"
        reads this server's GPUs now, so it is not kept."""
        from ..fits_here import models_answer

        return models_answer(request)

    @router.get("/api/v1/runtimes", response_model=list[str])
    def runtimes():
        from ..runtimes import runtime_names

        return runtime_names()

    @router.get("/api/v1/models", response_model=list[ModelEntry] | FitsDoc, responses=ERROR_RESPONSES)
    async def models(query: Annotated[ModelsQuery, Query()]):
        """The catalog (filtered by query), or with fits=true the catalog models that run on gpu / vram / ram at ctx,
        largest first: the same JSON as `runlocal models [--fits] --json` and MCP's models tool."""
        from ..fits_here import models_answer
        from ..request import ModelsRequest

        fields = query.model_dump()
        q = fields.pop("q")
        if q is not None and fields["query"] is not None and q != fields["query"]:
            raise InputError("query: given twice, as query and as q (its first name), with different words; give one")
        fields["query"] = fields["query"] if fields["query"] is not None else q
        request = ModelsRequest(**fields)
        if not request.fits:
            return models_answer(request)
        if request.gpu.strip().lower() == "auto" and not request.vram:
            return await pool.run(models_answer, request)
        return await pool.run(fitting, request, key=f"models{request!r}")

    @router.get("/api/v1/hardware", response_model=list[DeviceDoc], responses=ERROR_RESPONSES)
    def hardware(q: Annotated[str | None, Query(max_length=100)] = None,
                 min_memory: Annotated[str | None, Query(max_length=40)] = None,
                 kind: Annotated[str | None, Query(max_length=20)] = None,
                 vendor: Annotated[str | None, Query(max_length=20)] = None):
        """The catalog devices every word of q names (id, name or an alias), filtered: the same records as
        `runlocal hardware --json` and MCP's hardware tool (hardware_list.device_record)."""
        from ..hardware_list import hardware_records

        return hardware_records(q, min_memory=min_memory, kind=kind, vendor=vendor)

    @router.get("/api/v1/errors", response_model=list[ErrorEntryDoc])
    def errors(q: Annotated[str | None, Query(max_length=200)] = None):
        from ..diagnose import kb

        entries = kb.search(q) if q else kb.load_entries()
        return [e.to_dict() if hasattr(e, "to_dict") else asdict(e) for e in entries]

    return router


def create_app_from_environment() -> FastAPI:
    """`runlocal serve`'s factory: each uvicorn worker process builds the app from the options the
    command put in RUNLOCAL_SERVE_OPTIONS (and the store settings config.py reads)."""
    import os
    import sys

    # planning threads are CPU-bound Python: hand the GIL over every 1 ms (default 5 ms) so that the event loop,
    # which answers cheap requests meanwhile, waits less for it (benchmarks/server_safety.py)
    sys.setswitchinterval(0.001)
    options = json.loads(os.environ.get("RUNLOCAL_SERVE_OPTIONS") or "{}")
    policy = ReadPolicy.server(local_dir=options.pop("local_dir", None),
                               remote_hosts=options.pop("remote_hosts", ()),
                               use_hf_token=options.pop("use_hf_token", False))
    return create_app(policy=policy, **options)
