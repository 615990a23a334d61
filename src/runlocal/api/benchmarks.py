"""/api/v1/benchmarks: measured results submitted to the server, trusted before they count.

- Anyone may submit; an anonymous submission is stored ``verified: false`` and changes no answer.
- A row names a model the server could plan (``names_a_model``: a catalog alias, an Ollama tag or Hub GGUF
  name of a catalog model, or a Hugging Face repo id), or it is refused (422) — and a stored row that does not
  (an older version's) is not listed: the store is not a notice board for a path or free text. Its device is a
  catalog device's id, name or alias, or the CPU (``names_a_device``), and its runtime one planned here, optionally
  ==VERSION (``runtime_problem``: get_runtime's rule); else 422 naming the field and what was expected.
- A submission with a submitter token the operator issued (``runlocal serve --submitter-token``), or
  the admin token, is verified on arrival; an admin verifies any other row with
  ``POST /api/v1/benchmarks/{id}/verify``. Only verified rows change /check (measured.py).
- Figures a device or model cannot produce are refused (422 naming the field): decode above
  ``measured.DECODE_MARGIN`` × bandwidth / bytes of active weights, a context above the trained one.
- Credentials: ``Authorization: Bearer <token>`` (RFC 6750 §2.1); none where one is needed → 401,
  any other scheme → 401, a token that is not the admin's (or a submitter's) → 403.
- A replayed ``Idempotency-Key`` answers the first row (200); the same key with another body → 409.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from .store import BenchmarkStore, IdempotencyConflict

PLAIN = r"^[^\x00-\x1f\x7f]*$"       # no control characters (PostgreSQL refuses NUL in text)
SETTINGS_MAX_BYTES = 8192
SETTINGS_MAX_DEPTH = 32
Text = Annotated[str, Field(pattern=PLAIN)]
# the characters of a model's name — a catalog alias, an Ollama tag (qwen3:30b-a3b-q8_0), a Hub repo id, Ollama's
# hf.co/<repo>:<quant> — as a JSON Schema pattern (the OpenAPI document states it; names_a_model applies it first)
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:+-]*(/[A-Za-z0-9_.:+-]+){0,2}$"
_MODEL_NAME = re.compile(MODEL_NAME_PATTERN)
_ASCII_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")      # Hub repo ids are ASCII


def names_a_model(ref: str) -> bool:
    """Whether ``ref`` names a model by name alone, as a server resolves one: a catalog alias (any spelling the
    catalog knows it by: meta-llama/Llama-3.1-8B-Instruct), an Ollama tag or Hub GGUF name of a catalog model
    (runtimes/pull_names.py: qwen3:30b-a3b-q8_0, hf.co/<repo>:<quant>), or a Hugging Face repo id (owner/name).
    Not a path, a URL or free text: the one rule for what the store keeps and shows of the names callers send."""
    from ..model.catalog import find_entry
    from ..runtimes.pull_names import read_pull_name

    if not _MODEL_NAME.match(ref):
        return False
    return find_entry(ref) is not None or bool(_ASCII_REPO_ID.match(ref)) or read_pull_name(ref) is not None


DEVICE_NAME_RULE = ("device: expected a catalog device id or alias (GET /api/v1/hardware: rtx-4090, NVIDIA GeForce "
                    "RTX 4090), or CPU for a CPU-only run; this server keeps no other device name")


def names_a_device(text: str) -> bool:
    """A benchmark's device: a catalog device by its id, name or an alias, or the CPU (probe's "CPU", the plan's "CPU
    RAM": measured.device_key reads them as one device, "cpu")."""
    from ..hardware.catalog import names_a_device as catalog_name
    from ..measured import device_key

    return catalog_name(text) or device_key(text) == "cpu"


def runtime_problem(text: str) -> str | None:
    """Why a benchmark's runtime is not one planned here (get_runtime's own words: a known engine, optionally
    ==VERSION with a release it reads), or None."""
    from ..errors import InputError
    from ..runtimes import get_runtime

    try:
        get_runtime(text)
    except InputError as e:
        return str(e).removeprefix("runtime: ")
    return None


MODEL_NAME_RULE = ("expected a catalog alias or a Hugging Face repo id (owner/name), or an Ollama tag of a catalog "
                   "model; this server keeps no other model name")


class BenchmarkBody(BaseModel):
    """A measurement. Numbers are JSON numbers (true is not 1, "5" is not 5; 8192.0 is the integer 8192, as in
    JSON Schema)."""
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    device: Text = Field(min_length=1, max_length=200, description="a catalog device id or alias (GET "
                         "/api/v1/hardware), or CPU for a CPU-only run")
    runtime: Text = Field(min_length=1, max_length=64, description="llama.cpp, ollama, vllm, sglang, transformers or "
                          "mlx, optionally NAME==VERSION")
    runtime_version: Text | None = Field(None, max_length=64)
    model: Text = Field(min_length=1, max_length=300, json_schema_extra={"pattern": MODEL_NAME_PATTERN},
                        description="a catalog alias (GET /api/v1/models) or a Hugging Face repo id (owner/name)")
    quant: Text | None = Field(None, max_length=64)
    settings: dict[str, Any] = Field(default_factory=dict, description="the runtime's settings as run (JSON object, "
                                     f"at most {SETTINGS_MAX_BYTES} bytes and {SETTINGS_MAX_DEPTH} levels); "
                                     "`decode_at_context` (or llama-bench's `n_depth`): the tokens in the KV cache "
                                     "while decode was measured — without it the decode counts at an unstated depth")
    decode_tokens_per_s: float | None = Field(None, strict=True, ge=0, le=1e6, description="one stream's decode speed")
    prefill_tokens_per_s: float | None = Field(None, strict=True, ge=0, le=1e8)
    ttft_s: float | None = Field(None, strict=True, ge=0, le=86400)
    peak_memory_bytes: int | None = Field(None, ge=0, le=1 << 50)
    max_context: int | None = Field(None, ge=0, le=1 << 31)
    max_concurrency: int | None = Field(None, ge=0, le=1 << 20)
    submitter: Text | None = Field(None, max_length=100)
    measured_at: datetime | None = Field(None, description="ISO 8601 time of the measurement")
    source: Text | None = Field(None, max_length=64)

    @field_validator("peak_memory_bytes", "max_context", "max_concurrency", mode="before")
    @classmethod
    def _json_integer(cls, v: Any) -> Any:
        if isinstance(v, (bool, str)):
            raise ValueError("expected a JSON number")    # noqa: TRY004 — pydantic reports ValueError only
        return v

    @field_validator("model")
    @classmethod
    def _names_a_model(cls, v: str) -> str:
        if not names_a_model(v):
            raise PydanticCustomError("model_name", MODEL_NAME_RULE)
        return v

    @field_validator("device")
    @classmethod
    def _names_a_device(cls, v: str) -> str:
        if not names_a_device(v):
            raise PydanticCustomError("device_name", DEVICE_NAME_RULE)
        return v

    @field_validator("runtime")
    @classmethod
    def _names_a_runtime(cls, v: str) -> str:
        problem = runtime_problem(v)
        if problem is not None:
            raise PydanticCustomError("runtime_name", "runtime: {why}", {"why": problem})
        return v

    @field_validator("settings")
    @classmethod
    def _plain_settings(cls, v: dict[str, Any]) -> dict[str, Any]:
        _check_json(v, 0)
        if len(json.dumps(v, allow_nan=False)) > SETTINGS_MAX_BYTES:
            raise ValueError(f"at most {SETTINGS_MAX_BYTES} bytes of JSON")
        return v


class BenchmarkRow(BaseModel):
    """A stored benchmark as the API shows it (no input bounds: rows stored by older versions still show)."""
    id: int
    device: str
    runtime: str
    runtime_version: str | None = None
    model: str
    quant: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    decode_tokens_per_s: float | None = None
    prefill_tokens_per_s: float | None = None
    ttft_s: float | None = None
    peak_memory_bytes: int | None = None
    max_context: int | None = None
    max_concurrency: int | None = None
    submitter: str | None = None
    measured_at: str | None = None
    source: str | None = None
    created_at: str | None = None
    verified: bool = Field(description="counts toward /check answers only when true")
    verified_by: str | None = None
    verified_at: str | None = None


def listed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored rows anyone is shown (the API's list, the site's directory and device pages): those that name a
    model as a submission must (BenchmarkBody's rule), so a row an older version stored with a path or free text as
    its model is shown to no one (an admin still reads, verifies or deletes it by id)."""
    return [r for r in rows if names_a_model(str(r.get("model") or ""))]


def _check_json(v: Any, depth: int) -> None:
    if depth > SETTINGS_MAX_DEPTH:
        raise ValueError(f"nested deeper than {SETTINGS_MAX_DEPTH} levels")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("numbers must be finite (no NaN or Infinity)")
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for _, x in items:
        _check_json(x, depth + 1)


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "no `Authorization: Bearer <token>` where one is needed"},
    403: {"description": "the token is not one this server accepts for this"},
    404: {"description": "no benchmark with this id"},
}


class PlainErrors(APIRoute):
    """422 answers without the rejected input echoed back: FastAPI's default handler would try to encode a
    NaN it was sent (JSON has none) and fail with a 500. FastAPI's documented custom APIRoute hook."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def plain(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as e:
                from .errors import with_field_name

                detail = [{"loc": list(err.get("loc", ())),
                           "msg": with_field_name(list(err.get("loc", ())), str(err.get("msg", ""))),
                           "type": str(err.get("type", ""))} for err in e.errors()]
                return JSONResponse({"detail": detail}, status_code=422)

        return plain


def bearer(authorization: str | None, *, required: bool) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; 401 when it is missing (and required)
    or uses another scheme (a bare token included)."""
    if authorization is None or not authorization.strip():
        if required:
            raise HTTPException(401, "this needs `Authorization: Bearer <token>`",
                                headers={"WWW-Authenticate": "Bearer"})
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(401, "the Authorization header must be `Bearer <token>`",
                            headers={"WWW-Authenticate": 'Bearer error="invalid_request"'})
    return token.strip()


def _matches(token: str, candidates: Iterable[str]) -> bool:
    hits = [hmac.compare_digest(token.encode(), c.encode()) for c in candidates if c]   # every one compared
    return any(hits)


def token_label(token: str) -> str:
    """Who verified, without keeping the token: a short digest of it."""
    return "submitter:" + hashlib.sha256(token.encode()).hexdigest()[:12]


def _plausibility_error(body: BenchmarkBody) -> HTTPException | None:
    """422 naming the field when the figures cannot come from this device and model (measured.stored_record_problem:
    the probe checks its records by the same rule before it stores them)."""
    from ..measured import stored_record_problem

    problem = stored_record_problem(body.model_dump())
    if problem is None:
        return None
    field, why = problem
    return HTTPException(422, [{"loc": ["body", field], "msg": f"{field}: {why}", "type": "implausible"}])


def _verifier(token: str | None, admin_token: str | None, submitters: tuple[str, ...]) -> str | None:
    """Who vouches for a submitted row: "admin", a submitter token's label, or None (anonymous: unverified);
    a token that is neither is refused."""
    if token is None:
        return None
    if admin_token and _matches(token, [admin_token]):
        return "admin"
    if _matches(token, submitters):
        return token_label(token)
    raise HTTPException(403, "not a submitter token of this server (leave Authorization out to submit unverified)")


def add_benchmark(store: BenchmarkStore, body: BenchmarkBody, *, token: str | None, admin_token: str | None,
                  submitters: Iterable[str], idempotency_key: str | None = None) -> tuple[dict[str, Any], bool]:
    """Store ``body`` under the trust rules above: (row, created), or HTTPException (403, 409, 422 naming the
    field). POST /api/v1/benchmarks and the site's submit form both store through here."""
    verified_by = _verifier(token, admin_token, tuple(t for t in submitters if t))
    problem = _plausibility_error(body)
    if problem is not None:
        raise problem
    try:
        return store.add(body.model_dump(), idempotency_key, verified_by=verified_by)
    except IdempotencyConflict:
        raise HTTPException(409, "this Idempotency-Key was used before with a different body") from None


def benchmarks_router(store: BenchmarkStore, *, admin_token: str | None, submitter_tokens: Iterable[str] = (),
                      on_change: Callable[[], None] = lambda: None,
                      write_limit: Callable[..., None] | None = None) -> APIRouter:
    """The endpoints over ``store``; ``on_change`` runs after each write this process makes (the app's
    cache then reads the store's version at once instead of after its TTL); ``write_limit``, a FastAPI
    dependency run before each write (the app's per-client rate limit)."""
    router = APIRouter(prefix="/api/v1/benchmarks", tags=["benchmarks"], route_class=PlainErrors)
    writes = [Depends(write_limit)] if write_limit is not None else []
    submitters = tuple(t for t in submitter_tokens if t)

    def admin(authorization: str | None) -> str:
        token = bearer(authorization, required=True)
        assert token is not None
        if not admin_token:
            raise HTTPException(403, "this server has no admin token (RUNLOCAL_ADMIN_TOKEN)")
        if not _matches(token, [admin_token]):
            raise HTTPException(403, "not the admin token")
        return "admin"

    @router.post("", status_code=201, response_model=BenchmarkRow, dependencies=writes,
                 responses={200: {"description": "a replayed Idempotency-Key: the first row", "model": BenchmarkRow},
                            400: {"description": "the body is not JSON (or not UTF-8)"},
                            401: ERRORS[401], 403: ERRORS[403],
                            413: {"description": "the body is over the server's cap"},
                            409: {"description": "the Idempotency-Key was used with a different body"}})
    def submit(body: BenchmarkBody, response: Response,
               idempotency_key: Annotated[str | None, Header(max_length=128, pattern=PLAIN)] = None,
               authorization: Annotated[str | None, Header()] = None):
        """Store a measurement: unverified when anonymous, verified with a submitter (or the admin) token."""
        row, created = add_benchmark(store, body, token=bearer(authorization, required=False),
                                     admin_token=admin_token, submitters=submitters, idempotency_key=idempotency_key)
        on_change()
        if not created:
            response.status_code = 200
        return row

    @router.get("", response_model=list[BenchmarkRow])
    def list_benchmarks(device: Annotated[str | None, Query(max_length=200, pattern=PLAIN)] = None,
                        model: Annotated[str | None, Query(max_length=300, pattern=PLAIN)] = None,
                        verified: bool | None = None, limit: Annotated[int, Query(ge=1, le=1000)] = 100):
        """Newest first; ``verified=true`` for the rows that count. Rows that name no model (stored before
        submissions had to) are left out."""
        return listed(store.list(device=device, model=model, verified=verified, limit=limit))

    @router.get("/{bench_id}", response_model=BenchmarkRow, responses={404: ERRORS[404]})
    def get_benchmark(bench_id: int):
        """One stored row by its id (whether or not it is listed)."""
        row = store.get(bench_id)
        if row is None:
            raise HTTPException(404, f"no benchmark {bench_id}")
        return row

    @router.post("/{bench_id}/verify", response_model=BenchmarkRow, dependencies=writes,
                 responses={401: ERRORS[401], 403: ERRORS[403], 404: ERRORS[404]})
    def verify_benchmark(bench_id: int, authorization: Annotated[str | None, Header()] = None):
        """Admin: let this row change predictions."""
        row = store.verify(bench_id, admin(authorization))
        if row is None:
            raise HTTPException(404, f"no benchmark {bench_id}")
        on_change()
        return row

    @router.delete("/{bench_id}", status_code=204, response_class=Response, dependencies=writes,
                   responses={401: ERRORS[401], 403: ERRORS[403], 404: ERRORS[404]})
    def delete_benchmark(bench_id: int, authorization: Annotated[str | None, Header()] = None):
        """Admin: remove a row."""
        admin(authorization)
        if not store.delete(bench_id):
            raise HTTPException(404, f"no benchmark {bench_id}")
        on_change()
        return Response(status_code=204)

    return router
