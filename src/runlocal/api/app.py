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
from typing import Any, Literal

from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from .. import config
from ..errors import ModelNotFoundError, RemoteError, RunlocalError
from .store import BenchmarkStore

MAX_BODY = 256 * 1024
RENDERED_TTL_S = 10.0
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
    parallel: int = Field(1, ge=1, le=4096)
    flash_attn: Literal["on", "off", "auto"] = "auto"
    batch: int | None = Field(None, ge=1, le=1 << 20)
    ubatch: int | None = Field(None, ge=1, le=1 << 20)
    n_gpu_layers: int | None = Field(None, ge=-1, le=10000)
    n_cpu_moe: int = Field(0, ge=0, le=10000)
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    max_num_batched_tokens: int | None = Field(None, ge=1, le=1 << 24)
    tp: int = Field(1, ge=1, le=1024)
    pp: int = Field(1, ge=1, le=1024)
    enforce_eager: bool = False
    mem_fraction_static: float | None = Field(None, gt=0, le=1)


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


def create_app(*, store_url: str | None = None, admin_token: str | None = None,
               cors_origins: list[str] | None = None) -> FastAPI:
    from .. import __version__

    app = FastAPI(title="runlocal", version=__version__,
                  description="Will this LLM run here? Memory, verdict, limits and fixes per runtime.")
    store_holder: dict[str, BenchmarkStore] = {}
    token = admin_token if admin_token is not None else config.admin_token()
    origins = cors_origins if cors_origins is not None else config.cors_origins()
    if origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST"], allow_headers=["*"])

    def store() -> BenchmarkStore:
        if "s" not in store_holder:
            store_holder["s"] = BenchmarkStore(store_url or config.store_url())
        return store_holder["s"]

    @app.middleware("http")
    async def cap_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return JSONResponse({"detail": f"request body over {MAX_BODY} bytes"}, status_code=413)
        if request.method in ("POST", "PUT", "PATCH") and length is None:
            body = b""
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY:
                    return JSONResponse({"detail": f"request body over {MAX_BODY} bytes"}, status_code=413)
            request._body = body  # starlette reads the cached body downstream
        return await call_next(request)

    # Rendered answers, reused while no benchmark was added or deleted here and for at most
    # RENDERED_TTL_S (other processes may write to a shared store): the load target (benchmarks/load.py)
    # leaves no time to query the store and re-encode the plan on every request.
    rendered: OrderedDict[str, tuple[float, int, bytes]] = OrderedDict()
    rendered_lock = threading.Lock()

    def checked(body: CheckBody, where: str):
        from ..measured import apply_measurements, store_records

        key = body.model_dump_json()
        now = time.monotonic()
        with rendered_lock:
            hit = rendered.get(key)
        if hit is not None and hit[0] > now and hit[1] == store().generation:
            return Response(hit[2], media_type="application/json")
        plan, notes, err = _cached_check(key)
        if err is not None:
            return _error_response(err, where)
        generation = store().generation
        doc = {**apply_measurements(plan, store_records(store(), plan)).to_dict(), "notes": notes}
        data = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
        with rendered_lock:
            rendered[key] = (now + RENDERED_TTL_S, generation, data)
            if len(rendered) > 2048:
                rendered.popitem(last=False)
        return Response(data, media_type="application/json")

    @app.post("/api/v1/check")
    def post_check(body: CheckBody):
        return checked(body, "body")

    @app.get("/api/v1/check")
    def get_check(model: str = Query(..., min_length=1, max_length=500), runtime: str = "llama.cpp",
                  gpu: str | None = None, vram: str | None = None, ram: str | None = None,
                  ctx: int | None = Query(None, gt=0), quant: str | None = None, kv_cache: str | None = None,
                  parallel: int = Query(1, ge=1, le=4096), flash_attn: Literal["on", "off", "auto"] = "auto",
                  n_gpu_layers: int | None = None, gpu_memory_utilization: float | None = Query(None, gt=0, le=1),
                  tp: int = Query(1, ge=1, le=1024)):
        body = CheckBody(model=model, runtime=runtime, gpu=gpu, vram=vram, ram=ram, ctx=ctx, quant=quant,
                         kv_cache=kv_cache, parallel=parallel, flash_attn=flash_attn, n_gpu_layers=n_gpu_layers,
                         gpu_memory_utilization=gpu_memory_utilization, tp=tp)
        return checked(body, "query")

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
                ctx: int | None = Query(None, gt=0), runtime: str = "llama.cpp", quant: str | None = None):
        from ..compare import compare_devices

        try:
            return compare_devices([d for d in devices.split(",") if d.strip()], model=model, ctx=ctx,
                                   runtime=runtime, quant=quant)
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
        return Response(status_code=204)

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
