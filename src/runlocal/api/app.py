"""The FastAPI app: versioned JSON endpoints returning the same objects as the CLI's --json,
the "Will it run?" page, and the benchmark store."""

from __future__ import annotations

import hmac
import json
import re
import threading
import time
from collections import OrderedDict
from dataclasses import asdict
from functools import lru_cache
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from .. import config
from ..errors import ModelNotFoundError, RemoteError, RunlocalError
from .store import BenchmarkStore

MAX_BODY = 256 * 1024
STORE_VERSION_TTL_S = 1.0
_FIELD = re.compile(r"^([a-z][a-z0-9_-]*): ")


class CheckBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = Field(min_length=1, max_length=500)
    runtime: str = Field("llama.cpp", max_length=40)
    gpu: str | None = Field(None, max_length=200)
    vram: str | None = Field(None, max_length=40)
    ram: str | None = Field(None, max_length=40)
    ctx: int | None = Field(None, gt=0, le=1 << 31)
    quant: str | None = Field(None, max_length=40)
    kv_cache: str | None = Field(None, max_length=20)
    cache_type_k: str | None = Field(None, max_length=20)
    cache_type_v: str | None = Field(None, max_length=20)
    parallel: int | None = Field(None, ge=1, le=4096)          # None: the runtime's default (llama-server: auto)
    flash_attn: Literal["on", "off", "auto"] = "auto"
    batch: int | None = Field(None, ge=1, le=1 << 20)
    ubatch: int | None = Field(None, ge=1, le=1 << 20)
    n_gpu_layers: int | None = Field(None, ge=-2, le=10000)     # -1 auto (llama-server --fit), -2 all
    n_cpu_moe: int = Field(0, ge=0, le=10000)
    override_tensor: list[Annotated[str, Field(min_length=3, max_length=500)]] = Field(default_factory=list, max_length=32)
    kv_unified: bool = False
    swa_full: bool = False
    no_mmap: bool = False
    fit: Literal["on", "off"] = "on"
    tensor_split: str | None = Field(None, max_length=200)
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    max_num_batched_tokens: int | None = Field(None, ge=1, le=1 << 24)
    tp: int | None = Field(None, ge=1, le=1024)
    pp: int = Field(1, ge=1, le=1024)
    enforce_eager: bool = False
    mem_fraction_static: float | None = Field(None, gt=0, le=1)
    max_new_tokens: int | None = Field(None, ge=1, le=1 << 31)
    attn_implementation: Literal["sdpa", "eager"] | None = None


class BenchmarkBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    device: str = Field(min_length=1, max_length=200)
    runtime: str = Field(min_length=1, max_length=64)
    runtime_version: str | None = Field(None, max_length=64)
    model: str = Field(min_length=1, max_length=300)
    quant: str | None = Field(None, max_length=64)
    settings: dict[str, Any] = Field(default_factory=dict)
    decode_tokens_per_s: float | None = Field(None, ge=0, le=1e6)
    prefill_tokens_per_s: float | None = Field(None, ge=0, le=1e8)
    ttft_s: float | None = Field(None, ge=0, le=86400)
    peak_memory_bytes: int | None = Field(None, ge=0, le=1 << 50)
    max_context: int | None = Field(None, ge=0, le=1 << 31)
    max_concurrency: int | None = Field(None, ge=0, le=1 << 20)
    submitter: str | None = Field(None, max_length=100)
    measured_at: str | None = Field(None, max_length=40)
    source: str | None = Field(None, max_length=64)


class DiagnoseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=MAX_BODY)
    runtime: str | None = Field(None, max_length=40)


def _error_response(err: RunlocalError, where: str) -> JSONResponse:
    status = 404 if isinstance(err, ModelNotFoundError) else 502 if isinstance(err, RemoteError) else 422
    msg = str(err)
    m = _FIELD.match(msg)
    loc = [where, m.group(1).replace("-", "_")] if m else [where]
    return JSONResponse({"detail": [{"loc": loc, "msg": msg, "type": err.__class__.__name__}]}, status_code=status)


@lru_cache(maxsize=2048)
def _cached_check(body_json: str) -> tuple[Any, list[str], RunlocalError | None]:
    """Plans are pure functions of the request for catalog models: cache them by request (the stored
    measurements, which change, are applied per request by the caller)."""
    from ..check import CheckRequest, check

    body = CheckBody.model_validate_json(body_json)
    try:
        plan, notes = check(CheckRequest(**body.model_dump(), use_measurements=False))
    except RunlocalError as e:
        return None, [], e
    return plan, notes, None


class BodyCap:
    """Refuses request bodies over ``limit`` bytes with 413, whether or not Content-Length is sent.

    Plain ASGI rather than @app.middleware("http"): Starlette's BaseHTTPMiddleware wraps every
    response in a stream, which costs the load target (benchmarks/load.py) a third of its throughput."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        too_large = JSONResponse({"detail": f"request body over {self.limit} bytes"}, status_code=413)
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            return await too_large(scope, receive, send)
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
                return await too_large(scope, receive, send)
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


def create_app(*, store_url: str | None = None, admin_token: str | None = None,
               cors_origins: list[str] | None = None) -> FastAPI:
    from .. import __version__

    app = FastAPI(title="runlocal", version=__version__,
                  description="Will this LLM run here? Memory, verdict, limits and fixes per runtime.")
    store_holder: dict[str, BenchmarkStore] = {}
    token = admin_token if admin_token is not None else config.admin_token()
    origins = cors_origins if cors_origins is not None else config.cors_origins()

    def store() -> BenchmarkStore:
        if "s" not in store_holder:
            store_holder["s"] = BenchmarkStore(store_url or config.store_url())
        return store_holder["s"]

    app.add_middleware(BodyCap, limit=MAX_BODY)

    # Rendered answers are reused while the benchmark store is unchanged (its version is read at most
    # once a second, since other processes may write to a shared store): the load target
    # (benchmarks/load.py) leaves no time to query the store and re-encode the plan on every request.
    rendered: OrderedDict[str, tuple[Any, bytes]] = OrderedDict()
    rendered_lock = threading.Lock()
    version_seen = {"at": -1.0, "version": None}

    def store_version():
        now = time.monotonic()
        if now - version_seen["at"] > STORE_VERSION_TTL_S:
            version_seen["version"], version_seen["at"] = store().version(), now
        return version_seen["version"]

    def render(key: str, where: str):
        from ..measured import apply_measurements, store_records

        plan, notes, err = _cached_check(key)
        if err is not None:
            return _error_response(err, where)
        version = store_version()
        doc = {**apply_measurements(plan, store_records(store(), plan)).to_dict(), "notes": notes}
        data = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
        with rendered_lock:
            rendered[key] = (version, data)
            if len(rendered) > 2048:
                rendered.popitem(last=False)
        return Response(data, media_type="application/json")

    async def checked(body: CheckBody, where: str, raw_key: str | None = None):
        key = body.model_dump_json()
        hit = rendered.get(key)
        if hit is None or hit[0] != store_version():
            response = await run_in_threadpool(render, key, where)     # planning is CPU work: off the event loop
            hit = rendered.get(key)
            if hit is None:                                           # an error answer: not cached
                return response
        if raw_key is not None:
            with rendered_lock:
                rendered[raw_key] = hit
        return Response(hit[1], media_type="application/json")

    async def cached_get(scope, receive, send, call_next):
        """GET /api/v1/check answered from the cache by its raw query string, before any parsing."""
        hit = rendered.get("GET?" + scope["query_string"].decode("latin-1"))
        if hit is not None and hit[0] == store_version():
            return await Response(hit[1], media_type="application/json")(scope, receive, send)
        return await call_next(scope, receive, send)

    app.add_middleware(Shortcut, path="/api/v1/check", handler=cached_get)

    @app.post("/api/v1/check")
    async def post_check(body: CheckBody):
        return await checked(body, "body")

    @app.get("/api/v1/check")
    async def get_check(request: Request, model: str = Query(..., min_length=1, max_length=500), runtime: str = "llama.cpp",
                        gpu: str | None = None, vram: str | None = None, ram: str | None = None,
                        ctx: int | None = Query(None, gt=0), quant: str | None = None, kv_cache: str | None = None,
                        parallel: int | None = Query(None, ge=1, le=4096), flash_attn: Literal["on", "off", "auto"] = "auto",
                        n_gpu_layers: int | None = None,
                        gpu_memory_utilization: float | None = Query(None, gt=0, le=1),
                        tp: int | None = Query(None, ge=1, le=1024)):
        body = CheckBody(model=model, runtime=runtime, gpu=gpu, vram=vram, ram=ram, ctx=ctx, quant=quant,
                         kv_cache=kv_cache, parallel=parallel, flash_attn=flash_attn, n_gpu_layers=n_gpu_layers,
                         gpu_memory_utilization=gpu_memory_utilization, tp=tp)
        return await checked(body, "query", raw_key="GET?" + request.url.query)

    @app.post("/api/v1/curve")
    def post_curve(body: CheckBody):
        from ..check import CheckRequest, curve

        try:
            return curve(CheckRequest(**body.model_dump()))
        except RunlocalError as e:
            return _error_response(e, "body")

    @app.get("/api/v1/runtimes")
    def runtimes():
        from ..runtimes import runtime_names

        return runtime_names()

    @app.get("/api/v1/compare")
    def compare(devices: str = Query(..., min_length=1, max_length=1000), model: str | None = Query(None, max_length=500),
                ctx: int | None = Query(None, gt=0), runtime: str = "llama.cpp", quant: str | None = None,
                used: bool = False):
        from ..compare import compare_devices

        try:
            return compare_devices([d for d in devices.split(",") if d.strip()], model=model, ctx=ctx,
                                   runtime=runtime, quant=quant, used=used)
        except RunlocalError as e:
            return _error_response(e, "query")

    @app.get("/api/v1/best")
    def best(model: str = Query(..., min_length=1, max_length=500), ctx: int | None = Query(None, gt=0, le=1 << 24),
             runtime: str = Query("llama.cpp", max_length=64), budget: float | None = Query(None, gt=0),
             used: bool = False, quant: str | None = Query(None, max_length=64)):
        """The same object as `runlocal best --json`."""
        from ..choose import best as run_best
        from ..model.resolve import resolve_model

        try:
            return run_best(resolve_model(model), ctx=ctx, runtime=runtime, budget_usd=budget, used=used,
                            quant=quant).to_dict()
        except RunlocalError as e:
            return _error_response(e, "query")

    @app.get("/api/v1/models")
    def models(q: str | None = Query(None, max_length=100)):
        from ..model import catalog

        entries = catalog.load_entries()
        out = [{"alias": e["alias"], "repo_id": e["repo_id"], "published_params": e.get("published_params"),
                "model_type": e["config"].get("model_type")} for e in entries]
        if q:
            ql = q.lower()
            out = [o for o in out if ql in o["alias"] or ql in o["repo_id"].lower()]
        return out

    @app.get("/api/v1/hardware")
    def hardware(q: str | None = Query(None, max_length=100)):
        from ..hardware.catalog import load_devices

        devs = [asdict(d) for d in load_devices()]
        if q:
            ql = q.lower()
            devs = [d for d in devs if ql in d["id"] or ql in d["name"].lower()]
        return devs

    @app.get("/api/v1/errors")
    def errors(q: str | None = Query(None, max_length=200)):
        from ..diagnose import kb

        entries = kb.search(q) if q else kb.load_entries()
        return [e.to_dict() if hasattr(e, "to_dict") else asdict(e) for e in entries]

    @app.post("/api/v1/diagnose")
    def diagnose(body: DiagnoseBody):
        from ..diagnose.classify import diagnose_text
        from ..diagnose.fixes import with_computed_fixes

        return with_computed_fixes(diagnose_text(body.text, runtime=body.runtime), body.runtime)

    @app.post("/api/v1/benchmarks", status_code=201)
    def submit(body: BenchmarkBody, response: Response,
               idempotency_key: str | None = Header(None, max_length=128)):
        row, created = store().add(body.model_dump(exclude={"measured_at"}) | {"measured_at": _when(body.measured_at)},
                                   idempotency_key)
        version_seen["at"] = -1.0                 # this process's own write is seen by the next check
        if not created:
            response.status_code = 200
        return row

    @app.get("/api/v1/benchmarks")
    def list_benchmarks(device: str | None = None, model: str | None = None, limit: int = Query(100, ge=1, le=1000)):
        return store().list(device=device, model=model, limit=limit)

    @app.delete("/api/v1/benchmarks/{bench_id}", status_code=204)
    def delete_benchmark(bench_id: int, authorization: str | None = Header(None)):
        given = (authorization or "").removeprefix("Bearer ").strip()
        if not token or not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPException(status_code=403, detail="deleting needs the admin token (Authorization: Bearer …)")
        if not store().delete(bench_id):
            raise HTTPException(status_code=404, detail=f"no benchmark {bench_id}")
        version_seen["at"] = -1.0
        return Response(status_code=204)

    from ..web.site import mount_site; mount_site(app)      # the site's pages; shadows the old "/" page below

    @app.get("/", response_class=HTMLResponse)
    def index():
        return resources.files("runlocal.web").joinpath("static/index.html").read_text(encoding="utf-8")

    @app.get("/static/{name}")
    def static(name: str):
        if not re.fullmatch(r"[a-z0-9_-]+\.(js|css|svg)", name):
            raise HTTPException(status_code=404)
        path = resources.files("runlocal.web").joinpath(f"static/{name}")
        if not path.is_file():
            raise HTTPException(status_code=404)
        media = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}[name.rsplit(".", 1)[1]]
        return Response(path.read_bytes(), media_type=media)

    if origins:   # added last, so outermost: its headers go on cached answers too
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST"], allow_headers=["*"])
    return app


def _when(text: str | None):
    from datetime import datetime

    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise HTTPException(status_code=422, detail=[{"loc": ["body", "measured_at"], "msg": "expected an ISO 8601 time",
                                                      "type": "value_error"}]) from None
