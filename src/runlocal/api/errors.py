"""One place that turns errors into answers: the errors.py tree → status codes, every 4xx naming its field.

    InputError, UnknownNameError, ModelFormatError   422
    ModelNotFoundError                               404
    RemoteError                                      502
    limits.Busy (planning pool full, deadline)       503 + Retry-After
    anything else                                    500 "internal error" (logged; no traceback to the caller)

The answer has FastAPI's own validation shape: ``{"detail": [{"loc": ["body" | "query", field], "msg", "type"}]}``.
"""

from __future__ import annotations

import logging
import re

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from ..errors import ModelNotFoundError, RemoteError, RunlocalError
from ..request import field_spelling, options
from .limits import Busy
from .schemas import ErrorAnswer

log = logging.getLogger("runlocal.api")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*): ")

ERROR_RESPONSES: dict[int | str, dict] = {
    400: {"model": ErrorAnswer, "description": "the body is not JSON"},
    404: {"model": ErrorAnswer, "description": "the model (path, repo, file) does not exist"},
    413: {"model": ErrorAnswer, "description": "request body over 256 KiB"},
    422: {"model": ErrorAnswer, "description": "a field is invalid; ``loc`` names it"},
    502: {"model": ErrorAnswer, "description": "the Hub or the remote host failed"},
    503: {"model": ErrorAnswer, "description": "planning is busy or took too long; retry after Retry-After seconds"},
}


def _flag_fields() -> dict[str, str]:
    """Every CLI flag name (without dashes) → the request field it sets: 'ngl' → 'n_gpu_layers'."""
    out: dict[str, str] = {}
    for name, opt in options().items():
        for flag in opt.flags:
            out.setdefault(flag.lstrip("-"), name)
    return out


_FLAGS = _flag_fields()


def field_of(err: RunlocalError) -> str | None:
    m = _FIELD.match(str(err))
    if m and (m.group(1) in _FLAGS or m.group(1).replace("-", "_") in options()):
        return _FLAGS.get(m.group(1), m.group(1).replace("-", "_"))
    if m and err.field is None:
        return m.group(1).replace("-", "_")
    return err.field


def status_of(err: RunlocalError) -> int:
    return 404 if isinstance(err, ModelNotFoundError) else 502 if isinstance(err, RemoteError) else 422


def error_answer(err: RunlocalError, where: str, renames: dict[str, str] | None = None) -> JSONResponse:
    name = field_of(err)
    name = (renames or {}).get(name or "", name)
    loc = [where, name] if name else [where]
    msg = field_spelling(str(err))
    if name and not _FIELD.match(msg):
        # a bare "unknown device 'x'" gets the field it is about, as MCP's tools say it (mcp_server._error_line):
        # the one line on both doors names the field, not only loc (site23)
        msg = f"{name}: {msg}"
    return JSONResponse({"detail": [{"loc": loc, "msg": msg, "type": err.__class__.__name__}]},
                        status_code=status_of(err))


async def known_query_only(request: Request) -> None:
    """Every /api/v1 endpoint: a query parameter it does not declare is refused (422 naming it, the answer /check's
    extra="forbid" model gives), instead of being ignored — `hours=25` on /cost had answered 200 at the default
    8 h a day. A coroutine: FastAPI runs a plain function dependency on its thread pool, a hop per request."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None or not request.query_params:
        return
    known = declared_query(route)
    keys = request.query_params.keys()
    unknown = [k for k in dict.fromkeys(keys) if k not in known]
    if unknown:
        takes = ", ".join(sorted(known)) or "no query parameter"
        path = getattr(route, "path", request.url.path)
        raise RequestValidationError([{"type": "extra_forbidden", "loc": ("query", k),
                                       "msg": f"{k}: not a parameter of {path} (it takes {takes})"} for k in unknown])
    # a parameter given twice (?ctx=4096&ctx=8192) is refused, not read last-one-wins: which one was meant is not
    # the server's guess. A list parameter (override_tensor) takes each value given
    repeated = [k for k in dict.fromkeys(keys) if len(request.query_params.getlist(k)) > 1
                and k not in declared_lists(route)]
    if repeated:
        raise RequestValidationError([{"type": "repeated_parameter", "loc": ("query", k),
                                       "msg": f"{k}: given {len(request.query_params.getlist(k))} times "
                                              f"({', '.join(v[:40] for v in request.query_params.getlist(k))}); "
                                              "expected one value"}
                                      for k in repeated])


def declared_lists(route) -> frozenset[str]:
    """The query parameters of a route that take several values (a list field of its query model:
    ``?override_tensor=a&override_tensor=b``). Computed once per route (kept on it)."""
    kept = getattr(route, "declared_list_names", None)
    if kept is None:
        kept = route.declared_list_names = frozenset(name for name, annotation in _query_fields(route)
                                                     if _takes_list(annotation))
    return kept


def _takes_list(annotation) -> bool:
    """Whether a field's type is a list (through Optional / Annotated / unions)."""
    from typing import get_args, get_origin

    if get_origin(annotation) in (list, tuple, set, frozenset):
        return True
    return any(_takes_list(a) for a in get_args(annotation) if a is not None)


def declared_query(route) -> frozenset[str]:
    """The query parameters a route declares, as its OpenAPI operation lists them: each parameter of its
    dependency tree, a query model (/check's CheckBody) by its fields. Computed once per route (kept on it)."""
    names_kept = getattr(route, "declared_query_names", None)
    if names_kept is None:
        names_kept = route.declared_query_names = frozenset(name for name, _ in _query_fields(route))
    return names_kept


def contract_messages(errors) -> list[dict]:
    """Pydantic's errors as the 422's detail; where one names a contract field (``ctx=abc``, ``runtime=foo``, a JSON
    ``"ram": 64``, ``n_gpu_layers=-3``, ``budget=-5``), the contract's own line for the same input
    (request.contract_line: the CLI's and MCP's words, under the field as the caller spelled it) replaces every entry
    for that field, under ``loc`` [where, field]."""
    from ..request import contract_line

    out: list[dict] = []
    said: set[tuple] = set()
    for e in errors:
        loc = [str(p) if not isinstance(p, int) else p for p in e.get("loc", ())]
        line = (contract_line(str(loc[1]), e.get("input"), str(e.get("type", "")))
                if len(loc) >= 2 and loc[0] in ("query", "body") else None)
        if line is None:
            out.append({"loc": loc, "msg": with_field_name(loc, str(e.get("msg", "invalid"))),
                        "type": str(e.get("type", "value_error"))})
        elif tuple(loc[:2]) not in said:
            said.add(tuple(loc[:2]))
            out.append({"loc": loc[:2], "msg": line[0], "type": line[1]})
    return out


def with_field_name(loc: list, msg: str) -> str:
    """Pydantic's words for a field the contract has no line on, after the field's name (``bogus: Extra inputs are
    not permitted``, ``model: Field required``): every 4xx message names its field, as the contract's lines do, for
    a caller who reads the message and not ``loc`` (site23: those two read as a bare sentence)."""
    if len(loc) < 2 or loc[0] not in ("query", "body") or _FIELD.match(msg):
        return msg
    return f"{loc[1]}: {msg}"


def _query_fields(route) -> list[tuple[str, object]]:
    """(name, type) of each query parameter of a route's dependency tree, a query model's by its fields."""
    fields: list[tuple[str, object]] = []
    pending = [route.dependant]
    while pending:
        dependant = pending.pop()
        for param in dependant.query_params:
            model = param.field_info.annotation
            if isinstance(model, type) and issubclass(model, BaseModel):
                fields.extend((f.alias or name, f.annotation) for name, f in model.model_fields.items())
            else:
                fields.append((param.alias, model))
        pending.extend(dependant.dependencies)
    return fields


def install_error_handlers(app: FastAPI, renames: dict[str, dict[str, str]] | None = None) -> None:
    """``renames``: per path, a field name as the library says it → the endpoint's parameter
    (/api/v1/compare calls its devices 'devices', the library 'gpu')."""

    @app.exception_handler(RunlocalError)
    async def runlocal_error(request: Request, err: RunlocalError):
        where = "body" if request.method in ("POST", "PUT", "PATCH") else "query"
        return error_answer(err, where, (renames or {}).get(request.url.path))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, err: RequestValidationError):
        """FastAPI's 422 without the ``input`` echo (NaN is no JSON; a caller's bytes are not repeated); a
        contract field's errors as the one line the CLI and MCP give (contract_messages)."""
        return JSONResponse({"detail": contract_messages(err.errors())}, status_code=422)

    @app.exception_handler(Busy)
    async def busy(request: Request, err: Busy):
        return JSONResponse({"detail": [{"loc": ["server"], "msg": str(err), "type": "Busy"}]}, status_code=503,
                            headers={"Retry-After": str(err.retry_after)})

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception):
        log.exception("unexpected error answering %s %s", request.method, request.url.path)
        return JSONResponse({"detail": [{"loc": ["server"], "msg": "internal error", "type": "InternalError"}]},
                            status_code=500)


# The write endpoints' answers besides their success (store endpoints; a token bucket per client, api/limits.py)
WRITE_RESPONSES: dict[int | str, dict] = {
    **ERROR_RESPONSES,
    200: {"description": "the same submission again (its Idempotency-Key): the row stored the first time"},
    401: {"model": ErrorAnswer, "description": "no token"},
    403: {"model": ErrorAnswer, "description": "a wrong token"},
    404: {"model": ErrorAnswer, "description": "no such row"},
    409: {"model": ErrorAnswer, "description": "an Idempotency-Key replayed with a different body"},
    429: {"model": ErrorAnswer, "description": "too many writes from this address; retry after Retry-After seconds"},
}
