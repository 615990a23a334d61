"""`runlocal mcp`: the same answers as the CLI's `--json`, as Model Context Protocol tools for agents.

Built on the official `mcp` SDK (2.x, `MCPServer`). Each tool answers one text block holding exactly the JSON
that `runlocal … --json` prints for the same question (the same library calls build it). Inputs use the request
contract's own field names: the `check` and `curve` schemas are derived from `runlocal.check.CheckRequest`'s
fields, described by the option each field carries (else by the CLI's help for it), so there is no third copy of
the options; the other tools' inputs are the CLI command's options under the same names (a test keeps them so).
Bad input is an MCP tool error (isError) whose one line names the field; the server keeps answering.

Over stdio the server runs as the user and reads what the CLI reads (files, URLs, the Hub). Over HTTP (bound to
127.0.0.1 only, Host header checked) it follows the public server's rules: a `model` that is a local path or a URL
is refused unless the operator allows it (`--allow-local-dir DIR`, `--allow-remote-host HOST`), and the Hub is
read without this machine's HF_TOKEN unless `--use-hf-token`."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import FunctionResource, Resource
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .errors import (
    InputError,
    ModelFormatError,
    ModelNotFoundError,
    RemoteError,
    RunlocalError,
    UnknownDeviceError,
    UnknownModelError,
)

# CheckRequest fields that are not options a caller sets (the CLI does not offer them either)
_INTERNAL_FIELDS = ("use_measurements", "extra")
# CheckRequest field → the CLI parameter carrying its help text, where the names differ
_CLI_NAMES = {"n_gpu_layers": "ngl"}
# what a JSON caller needs to know beyond the CLI's help (the CLI parses "auto" / "all" into these numbers)
_NOTES = {"n_gpu_layers": "here a number: N layers, -1 auto, -2 all"}
MAX_MODEL_REF = 500        # characters, as the HTTP API's CheckBody.model (a Hub repo id is at most 96)
MAX_TEXT = 8 << 20          # diagnose: a pasted log held in memory (the CLI streams files up to 100 MB)
_ARG_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False)


# --- what the HTTP transport may read ----------------------------------------------------------------------

@dataclass(frozen=True)
class ReadPolicy:
    """Which `model` strings the server may resolve. Stdio: everything the CLI reads (``open``). HTTP: catalog
    aliases and Hugging Face repo ids; local paths only inside ``local_dir`` (a relative one is taken inside it),
    URLs only to ``remote_hosts``. The same options and refusals as the public server's policy (`runlocal serve`);
    this gate answers first; the readers then apply their own policy (``library``) to what they fetch."""

    open: bool = True
    local_dir: Path | None = None
    remote_hosts: frozenset[str] = frozenset()
    use_hf_token: bool = False

    @property
    def library(self):
        """The readers' own policy (model/policy.py): byte caps, deadlines, no private addresses, the HF token."""
        from .model.policy import ReadPolicy as Readers

        if self.open:
            return Readers()
        return Readers.server(local_dir=self.local_dir, remote_hosts=tuple(self.remote_hosts),
                              use_hf_token=self.use_hf_token)

    @classmethod
    def server(cls, *, local_dir: str | None = None, remote_hosts: list[str] | tuple[str, ...] = (),
               use_hf_token: bool = False) -> ReadPolicy:
        folder = None
        if local_dir is not None:
            folder = Path(local_dir).expanduser().resolve()
            if not folder.is_dir():
                raise InputError(f"allow-local-dir: '{local_dir}' is not a folder")
        return cls(open=False, local_dir=folder, use_hf_token=use_hf_token,
                   remote_hosts=frozenset(h.strip().lower().strip("[]") for h in remote_hosts if h.strip()))

    def allowed_model(self, ref: str, field: str = "model") -> str:
        """``ref`` as the library should read it, or InputError naming ``field`` when this server may not."""
        _check_reference(ref, field)
        if self.open or ref.strip().startswith("hf://"):  # hf://: a file in a Hub repo, read from the Hub
            return ref
        if "://" in ref:
            host = (urlsplit(ref.strip()).hostname or "").lower()
            if host and host in self.remote_hosts and urlsplit(ref.strip()).scheme in ("http", "https"):
                return ref
            raise InputError(f"{field}: this server does not read URLs (the operator may allow a host with "
                             "--allow-remote-host HOST); give a catalog alias or a Hugging Face repo id")
        if self.local_dir is not None:
            path = Path(ref).expanduser()
            path = (path if path.is_absolute() else self.local_dir / path).resolve()   # symlinks followed first
            if not (_looks_like_path(ref) or path.exists()):
                return ref
            if path.is_relative_to(self.local_dir):
                return str(path)
            raise InputError(f"{field}: this server reads local paths only inside its allowed folder")
        if not _looks_like_path(ref):
            return ref
        raise InputError(f"{field}: this server does not read local paths (the operator may allow a folder with "
                         "--allow-local-dir DIR); give a catalog alias or a Hugging Face repo id")


def _check_reference(ref: str, field: str) -> None:
    """A model reference any reader can take: bounded, no NUL byte, a home folder that exists."""
    if len(ref) > MAX_MODEL_REF:
        raise InputError(f"{field}: at most {MAX_MODEL_REF} characters (an alias, a repo id, a path or a URL)")
    if "\0" in ref:
        raise InputError(f"{field}: contains a NUL character")
    if any(len(part) > 255 for part in ref.split("/")):      # NAME_MAX: no file or repo has a longer name
        raise InputError(f"{field}: a name of over 255 characters")
    if ref.startswith("~"):
        try:
            Path(ref).expanduser()
        except RuntimeError:
            raise InputError(f"{field}: no home folder for '{ref.split('/', 1)[0]}'") from None


def _looks_like_path(ref: str) -> bool:
    """What `model.resolve.resolve_model` would read from the disk: an existing path, or one spelled as a path."""
    if ref.startswith((".", "/", "~", "\\")) or ref.endswith((".gguf", ".json")) or "\\" in ref or ref.count("/") > 1:
        return True
    try:                                 # resolve_model reads an existing path before it looks up an alias
        return Path(ref).expanduser().exists()
    except (OSError, ValueError):
        return True


# --- argument models: typed, documented, the contract's own names -------------------------------------------

def _cli_help(command: Callable) -> dict[str, str]:
    """Each option's help text and flags, read from the CLI command that offers it (one source for the docs)."""
    out = {}
    for name, param in inspect.signature(command).parameters.items():
        info = param.default
        decls = [d for d in getattr(info, "param_decls", ()) or () if d.startswith("-")]
        parts = [getattr(info, "help", None) or "", f"CLI: {', '.join(decls)}" if decls else ""]
        out[name] = "; ".join(p for p in parts if p)
    return out


def _with_help(fields: dict[str, tuple], helps: dict[str, str]) -> dict[str, Any]:
    """(type, default[, description]) per field → pydantic fields, described by the CLI's help where not given."""
    out = {}
    for name, (kind, default, *extra) in fields.items():
        desc = extra[0] if extra else helps.get(_CLI_NAMES.get(name, name), "")
        desc = "; ".join(p for p in (desc, _NOTES.get(name, "")) if p)
        out[name] = (kind, Field(default, description=desc or None))
    return out


def check_fields(request: type | None = None) -> dict[str, tuple]:
    """A request's fields (default `CheckRequest`; request.ModelsRequest for the models tool) as (type, default[,
    description]): the tool's inputs, in the contract's order. A field that carries its option in its metadata
    (flags, help, choices) is described from it."""
    import typing

    from .check import CheckRequest

    request = request or CheckRequest
    hints = typing.get_type_hints(request)
    out: dict[str, tuple] = {}
    for f in dataclasses.fields(request):
        if f.name in _INTERNAL_FIELDS:
            continue
        default = f.default if f.default is not dataclasses.MISSING else ...
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        opt = f.metadata.get("option")
        if opt is None:
            out[f.name] = (hints[f.name], default)
            continue
        flags = [x for x in opt.flags if x.startswith("-")]
        parts = [opt.help, f"one of: {', '.join(opt.choices)}" if opt.choices else "",
                 f"CLI: {', '.join(flags)}" if flags else ""]
        out[f.name] = (hints[f.name], default, "; ".join(p for p in parts if p))
    return out


def _model(name: str, fields: dict[str, Any], doc: str) -> type[BaseModel]:
    return create_model(name, __config__=_ARG_CONFIG, __doc__=doc or None, **fields)


def build_arg_models() -> dict[str, type[BaseModel]]:
    from . import cli
    from .amounts import COST_BOUNDS
    from .request import ModelsRequest

    contract = _with_help(check_fields(), _cli_help(cli.check))
    users_lo, users_hi, _ = COST_BOUNDS["users"]       # best's users, bounded as every door bounds it
    ctx_type = str | int | None
    best_help, compare_help, cost_help = _cli_help(cli.best), _cli_help(cli.compare), _cli_help(cli.cost)
    return {
        "check": _model("CheckArgs", contract, "The request contract (`runlocal check`)."),
        "curve": _model("CurveArgs", {**contract, "contexts": (list[Annotated[int, Field(gt=0, le=1 << 31)]] | None,
            Field(None, max_length=64, description="context lengths to plan (default: powers of two from 512 to "
                                                   "the model's limit)"))},
            "Memory against context."),
        "best": _model("BestArgs", _with_help({
            "model": (str, ...), "ctx": (ctx_type, None), "runtime": (str | None, None),
            "budget": (float | None, None), "vendor": (str | None, None), "form": (str | None, None),
            "used": (bool, False), "quant": (str | None, None),
            "users": (Annotated[int, Field(ge=users_lo, le=users_hi)], 1), "best_quant_each": (bool, False)}, best_help), ""),
        "compare": _model("CompareArgs", _with_help({
            "devices": (list[str], ...), "model": (str | None, None), "ctx": (ctx_type, None),
            "runtime": (str | None, None), "quant": (str | None, None), "used": (bool, False),
            "best_quant_each": (bool, False), "ram": (str | None, None)}, compare_help), ""),
        "cost": _model("CostArgs", _with_help({
            "model": (str, ...), "gpu": (str, ...), "hours_per_day": (float, 8.0), "kwh_price": (float, 0.18),
            "years": (float, 3.0), "utilization": (float, 1.0), "used": (bool, False), "price": (float | None, None),
            "rent_price": (float | None, None), "ctx": (ctx_type, None), "runtime": (str | None, None),
            "quant": (str | None, None)}, cost_help), ""),
        "diagnose": _model("DiagnoseArgs", {
            "text": (str, Field(..., min_length=1, max_length=MAX_TEXT,
                                description="the pasted error message or whole log")),
            "runtime": (str | None, Field(None, description="llama.cpp | ollama | vllm | sglang | transformers | "
                                                            "mlx (default: detected from the log)"))}, ""),
        # `runlocal models`'s contract (request.ModelsRequest), as GET /api/v1/models takes it
        "models": _model("ModelsArgs", _with_help(check_fields(ModelsRequest), {}), ""),
        "hardware": _model("HardwareArgs", {
            "query": (str | None, Field(None, description="words in the device id, name or an alias, e.g. '4090', "
                                                          "'m3 max', 'strix halo'")),
            "min_memory": (str | None, Field(None, description="at least this much memory as marketed, e.g. '24G'")),
            "kind": (str | None, Field(None, description="gpu (desktop) | laptop | apple | unified | cpu")),
            "vendor": (str | None, Field(None, description="nvidia | amd | intel | apple | generic"))}, ""),
        "system": _model("SystemArgs", {}, ""),
        "errors": _model("ErrorsArgs", {
            "id": (str | None, Field(None, description="an entry id, e.g. 'cuda-oom-load'")),
            "query": (str | None, Field(None, description="words to search for, e.g. 'kv cache blocks'"))}, ""),
    }


def _validation_message(err: ValidationError, model: type[BaseModel]) -> str:
    """One line naming each field at fault, as the CLI's errors do; a contract field's value in the contract's own
    words (request.contract_line: ``ctx: …`` for a JSON 1e30, not a union's ``ctx.str: …; ctx.int: …``)."""
    from .request import contract_line

    parts: list[str] = []
    said: set[str] = set()
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or "arguments"
        top = str(e["loc"][0]) if e["loc"] else ""
        line = contract_line(top, e.get("input"), e["type"]) if top else None
        if line is not None:
            if top not in said:
                said.add(top)
                parts.append(line[0])
        elif e["type"] == "extra_forbidden":
            parts.append(f"{field}: unknown field (expected: {', '.join(model.model_fields)})")
        elif e["type"] == "missing":
            parts.append(f"{field}: required")
        else:
            parts.append(f"{field}: {e['msg'][0].lower()}{e['msg'][1:]}, got {json.dumps(e.get('input'), default=str)[:80]}")
    return "; ".join(parts)


# --- the answers: the same calls the CLI makes ---------------------------------------------------------------

def _ctx(value) -> int | None:
    from .units import parse_tokens

    return parse_tokens(value) if value is not None else None


def _request(args: dict[str, Any]):
    from .check import CheckRequest

    args = dict(args)
    args["override_tensor"] = tuple(args.get("override_tensor") or ())
    return CheckRequest(**args)


def check_doc(a: dict[str, Any], policy=None):
    from .check import check, check_document

    plan, notes = check(_request(a), policy)
    return check_document(plan, notes)


def curve_doc(a: dict[str, Any], policy=None):
    from .check import curve

    contexts = a.pop("contexts", None)
    return curve(_request(a), contexts, policy)


def best_doc(a: dict[str, Any], policy=None):
    from .shopping import best_for

    return best_for(a["model"], policy=policy, vendor=a["vendor"], form=a["form"], ctx=_ctx(a["ctx"]),
                    runtime=a["runtime"], budget_usd=a["budget"], used=a["used"], quant=a["quant"], users=a["users"],
                    best_quant_each=a["best_quant_each"])


def compare_doc(a: dict[str, Any], policy=None):
    from .compare import compare_devices

    return compare_devices(a["devices"], model=a["model"], ctx=_ctx(a["ctx"]), runtime=a["runtime"],
                           quant=a["quant"], used=a["used"], policy=policy, best_quant_each=a["best_quant_each"],
                           ram=a["ram"])


def cost_doc(a: dict[str, Any], policy=None):
    from .shopping import cost_for

    return cost_for(a["model"], a["gpu"], policy=policy, ctx=_ctx(a["ctx"]), runtime=a["runtime"], quant=a["quant"],
                    hours_per_day=a["hours_per_day"], kwh_price=a["kwh_price"], years=a["years"],
                    utilization=a["utilization"], used=a["used"], price_usd=a["price"],
                    rent_usd_per_hour=a["rent_price"])


def diagnose_doc(a: dict[str, Any], policy=None):
    from .diagnose.fixes import with_computed_fixes
    from .diagnose.reading import diagnose_text

    if not a["text"].strip():
        raise InputError("text: the text is empty; paste the error message or the log lines around it")
    # the model a log names is re-planned under the readers' policy: over HTTP no path or URL outside what the
    # operator allows, as for a `model` field
    return with_computed_fixes(diagnose_text(a["text"], runtime=a["runtime"]), a["runtime"], policy)


def models_doc(a: dict[str, Any]):
    from .fits_here import models_answer
    from .request import ModelsRequest

    return models_answer(ModelsRequest(**a))


def hardware_doc(a: dict[str, Any]):
    """The device catalog, as GET /api/v1/hardware?q= and `runlocal hardware --json` answer it."""
    from .hardware_list import hardware_records

    return hardware_records(a["query"], min_memory=a.get("min_memory"), kind=a.get("kind"), vendor=a.get("vendor"))


def system_doc(_a: dict[str, Any]):
    from .hardware.detect import detect_system

    return dataclasses.asdict(detect_system())


def errors_doc(a: dict[str, Any]):
    from .diagnose import kb

    if a["id"] is not None and a["query"] is not None:
        raise InputError("id: give either an id or a query, not both")
    if a["id"] is not None:
        return kb_entry(a["id"], field="id")
    entries = kb.search(a["query"]) if a["query"] else kb.load_entries()
    return [e.to_dict() for e in entries]


def kb_entry(entry_id: str, field: str = "id") -> dict[str, Any]:
    from .diagnose import kb

    entry = kb.get(entry_id.strip())
    if entry is None:
        close = difflib.get_close_matches(entry_id, [e.id for e in kb.load_entries()], n=3, cutoff=0.5)
        hint = f"; did you mean: {', '.join(close)}?" if close else " (search with the errors tool's query)"
        raise InputError(f"{field}: no errors knowledge-base entry '{entry_id}'{hint}")
    return entry.to_dict()


def dumps(doc: Any) -> str:
    """The CLI's `--json` text (`json.dumps(…, indent=2)`), never NaN or Infinity (invalid JSON)."""
    return json.dumps(doc, indent=2, allow_nan=False, default=str)


# --- tools ---------------------------------------------------------------------------------------------------

# which field a bare error (one whose message does not start with "field: ") is about, per tool
_MODEL_ERRORS = (UnknownModelError, ModelNotFoundError, ModelFormatError, RemoteError)


def _error_line(err: RunlocalError, tool: str, fields: dict) -> str:
    """The library's one-line message, starting with the tool's own name for the field (the library writes the
    CLI's spelling, `gpu-memory-utilization:`; a bare `unknown model 'x'` gets the field it is about)."""
    from .request import field_spelling

    msg = field_spelling(" ".join(str(err).split()))      # ngl: … → n_gpu_layers: … (the tool's field)
    head, sep, rest = msg.partition(":")
    if sep and head.strip().replace("-", "_") in fields:
        return f"{head.strip().replace('-', '_')}:{rest}"
    if isinstance(err, UnknownDeviceError):
        return f"{'devices' if tool == 'compare' else 'gpu'}: {msg}"
    if isinstance(err, _MODEL_ERRORS) and "model" in fields:
        return f"model: {msg}"
    return msg


class _RawArguments(ArgModelBase):
    """Hands the tool its arguments untouched, so that it validates them itself and answers a bad one with a
    one-line tool error naming the field (the SDK's own message is pydantic's multi-line report)."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


# answer(args) or, for the tools that read a model reference (diagnose: one its log names), answer(args, readers)
TOOLS: dict[str, tuple[Callable[..., Any], str, tuple[str, ...]]] = {
    # name: (answer, description, fields holding a model reference the read policy checks)
    "check": (check_doc, ("Will MODEL run on this hardware with these settings? Memory per device (weights, KV "
              "cache, compute, overhead), verdict, largest context and concurrency, speed and ranked fixes with the "
              "exact command. Same JSON as `runlocal check --json`."), ("model",)),
    "curve": (curve_doc, ("Memory against context length for MODEL with these settings, with the device capacity "
              "line: the chart behind 'how much context can I have'."), ("model",)),
    "best": (best_doc, ("Catalog devices and multi-GPU setups that run MODEL, ranked by decode tokens/s per dollar. "
             "Same JSON as `runlocal best --json`."), ("model",)),
    "compare": (compare_doc, ("Devices side by side: capacity, bandwidth, price, largest catalog model, and MODEL's "
                "verdict and speed on each. Same JSON as `runlocal compare --json`."), ("model",)),
    "cost": (cost_doc, ("Owning GPU(s) (price over N years + electricity) against renting by the hour, per year and "
             "per million tokens. Same JSON as `runlocal cost --json`."), ("model",)),
    "diagnose": (diagnose_doc, ("Name the failure in a pasted error message or log (CUDA OOM, vLLM KV blocks, "
                 "llama.cpp allocation, OOM killer…) and compute the fix from its numbers. Same JSON as "
                 "`runlocal diagnose --json`."), ()),
    "models": (models_doc, ("Search the embedded model catalog (aliases usable as `model`); with fits: the catalog "
               "models that run on this machine or on `gpu`, largest first. Same JSON as `runlocal models "
               "[--fits] --json`."), ()),
    "hardware": (hardware_doc, ("Search the device catalog (GPUs, Apple silicon, CPUs) by any name, filtered by "
                 "memory, kind and vendor: memory, bandwidth, launch price and dated cloud rent per GPU-hour. Same "
                 "JSON as GET /api/v1/hardware and `runlocal hardware --json`."), ()),
    "system": (system_doc, ("This machine: each GPU's memory free right now and system RAM. Same JSON as "
               "`runlocal system --json`."), ()),
    "errors": (errors_doc, ("The errors knowledge base: one entry by id, or a search; cause, fixes per runtime, "
               "sources. Same JSON as `runlocal errors --json`."), ()),
}


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def make_tool(name: str, args_model: type[BaseModel], policy: ReadPolicy) -> Tool:
    answer, description, model_fields = TOOLS[name]
    readers = policy.library

    def run(arguments: dict[str, Any]) -> str | CallToolResult:
        try:
            args = args_model.model_validate(arguments).model_dump()
        except ValidationError as e:
            return _error(_validation_message(e, args_model))
        try:
            for f in model_fields:
                if args.get(f):
                    args[f] = policy.allowed_model(args[f], f)
            return dumps(answer(args, readers) if model_fields or answer is diagnose_doc else answer(args))
        except RunlocalError as e:
            return _error(_error_line(e, name, args_model.model_fields))

    return Tool(fn=run, name=name, title=None, description=description, context_kwarg=None,
                parameters=args_model.model_json_schema(), fn_metadata=FuncMetadata(arg_model=_RawArguments),
                is_async=False, annotations=ToolAnnotations(read_only_hint=True, open_world_hint=bool(model_fields)))


# --- resources and the prompt --------------------------------------------------------------------------------

def _kb_entry_doc(entry_id: str) -> str:
    return dumps(kb_entry(entry_id))


def _resources() -> list[Resource]:
    from .diagnose import kb

    out: list[Resource] = [
        FunctionResource(uri="runlocal://models", name="models", mime_type="application/json",
                         description="The embedded model catalog (aliases usable as `model`), as "
                                     "`runlocal models --json`.",
                         fn=lambda: dumps(models_doc({}))),
        FunctionResource(uri="runlocal://hardware", name="hardware", mime_type="application/json",
                         description="The device catalog: memory, bandwidth, price, rent, sources.",
                         fn=lambda: dumps(hardware_doc({"query": None}))),
    ]
    for entry in kb.load_entries():
        out.append(FunctionResource(uri=f"runlocal://errors/{entry.id}", name=f"errors/{entry.id}",
                                    title=entry.title, mime_type="application/json",
                                    description=f"Errors knowledge base: {entry.title} [{entry.category}]",
                                    fn=partial(_kb_entry_doc, entry.id)))
    return out


PLAN_PROMPT = """Plan a deployment of {model} for this goal: {goal}.
Hardware: {hardware}.

Use the runlocal tools, and quote their numbers rather than estimating:
1. `system` (if the hardware is this machine) to learn each GPU's free memory now and the RAM.
2. `check` with model, gpu (or vram/ram), runtime and ctx/parallel from the goal. Read `verdict`, `memory`,
   `max_context`, `max_concurrency`, `speed` and `fixes`.
3. If it does not fit or is too slow: apply the first fix (lower `quant`, `kv_cache` q8_0, smaller `ctx`,
   fewer `parallel`, `n_cpu_moe` …) and `check` again; `curve` shows how memory grows with context;
   `best` / `compare` / `cost` when the hardware is still open.
4. Answer with the runtime, the exact launch command from the plan, the memory per device, the largest context and
   concurrency, and the expected tokens/s — and what was given up.
If a launch later fails, pass its log to `diagnose`."""


def plan_deployment(model: str, goal: str = "chat for one user at 8k context",
                    hardware: str = "this machine", runtime: str = "any") -> str:
    """Plan a deployment: pick runtime, quantization, context and concurrency that fit, using runlocal's tools."""
    return PLAN_PROMPT.format(model=model, goal=goal, hardware=hardware) + (
        f"\nUse the runtime {runtime}." if runtime and runtime != "any" else "\nCompare llama.cpp, Ollama and vLLM "
        "if the goal allows.")


# --- the server ----------------------------------------------------------------------------------------------

def build_server(policy: ReadPolicy | None = None) -> MCPServer:
    from . import __version__

    policy = policy or ReadPolicy()
    models = build_arg_models()
    server = MCPServer(
        "runlocal", version=__version__, log_level="WARNING", resources=_resources(),
        tools=[make_tool(name, models[name], policy) for name in TOOLS],
        instructions="Will this LLM run here, with these settings, and if not what to change? Call `check` with "
                     "a model (catalog alias such as llama-3.1-8b, or a Hugging Face repo id) and a gpu; the answers "
                     "are runlocal's plans, computed from the model's real metadata and each runtime's rules.")
    server.prompt(name="plan_deployment", title="Plan a deployment")(plan_deployment)
    return server


def warm_planner() -> None:
    """Plan one catalog model in the background as the server starts, so that the planner's modules and tables are
    loaded before the agent's first `check` (it waits for the SDK's handshake and the tool listing meanwhile)."""
    from .check import CheckRequest, check

    try:
        check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ctx=8192, use_measurements=False))
    except Exception:  # noqa: BLE001, S110 - a warm-up never stops the server; the real call reports its own error
        pass


def serve(transport: str = "stdio", *, port: int = 8765, allow_local_dir: str | None = None,
          allow_remote_hosts: list[str] | None = None, use_hf_token: bool = False) -> None:
    """Run over stdio (as the user) or streamable HTTP on 127.0.0.1 (the public server's read rules)."""
    if transport not in ("stdio", "http"):
        raise InputError(f"transport: expected stdio or http, got '{transport}'")
    if transport == "stdio":
        if allow_local_dir or allow_remote_hosts or use_hf_token:
            raise InputError("allow-local-dir: --allow-local-dir, --allow-remote-host and --use-hf-token are for "
                             "--transport http (over stdio the server reads what you can)")
        server = build_server(ReadPolicy(open=True))
        threading.Thread(target=warm_planner, name="warm-planner", daemon=True).start()
        server.run("stdio")
        return
    if not 0 < port < 65536:
        raise InputError(f"port: expected 1-65535, got {port}")
    from mcp.server.transport_security import TransportSecuritySettings

    policy = ReadPolicy.server(local_dir=allow_local_dir, remote_hosts=allow_remote_hosts or (),
                               use_hf_token=use_hf_token)
    loopback = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=["127.0.0.1:*", "localhost:*"],
                                         allowed_origins=["http://127.0.0.1:*", "http://localhost:*"])
    server = build_server(policy)
    threading.Thread(target=warm_planner, name="warm-planner", daemon=True).start()
    server.run("streamable-http", host="127.0.0.1", port=port, transport_security=loopback)
