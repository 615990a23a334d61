"""The HTTP API's request and answer models, derived from the one request contract (runlocal/request.py).

``CheckBody`` is generated field by field from ``CheckRequest``'s option table, so POST /check, GET /check (the
same model as query parameters), /curve, the CLI and the Python API share one set of bounds. Answer models
describe the JSON of ``Plan.to_dict`` and friends for the OpenAPI document; they list the keys a client can
rely on and allow the ones added later ("add keys, never rename").
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from ..amounts import COST_BOUNDS
from ..errors import InputError
from ..request import MAX_NAME, MAX_SHORT, CheckRequest, ModelsRequest, Option, options
from ..shopping import FORM_FACTORS, VENDORS

# "8192", "32k", "1M", "1.5k", "1e6" (units.parse_tokens: Python's float() of the number, as the CLI reads it)
TOKENS_PATTERN = r"^\s*[0-9][0-9_,]*(\.[0-9]+)?([eE][+-]?[0-9]+)?\s*[kKmM]?\s*$"
# "24G", "24GiB", "24000M", "24e9" (units.parse_size)
SIZE_PATTERN = r"^\s*[0-9]*\.?[0-9]+([eE][+-]?[0-9]+)?\s*[A-Za-z]{0,3}\s*$"
# --vram: sizes, one per GPU, each optionally "N x" repeated, separated by commas (units.parse_sizes)
_ONE_SIZE = r"\s*([0-9]{1,2}\s*[xX×*]\s*)?[0-9]*\.?[0-9]+([eE][+-]?[0-9]+)?\s*[A-Za-z]{0,3}\s*"
SIZES_PATTERN = rf"^{_ONE_SIZE}(,{_ONE_SIZE})*$"


def _parsed(opt: Option):
    """A validator that runs the CLI's own parser, so the API accepts exactly what the CLI does."""
    def check(value: Any) -> Any:
        if value is None:
            return value
        from ..request import check_value

        try:
            check_value(opt, value)
        except InputError as e:
            raise ValueError(str(e).split(": ", 1)[-1]) from None
        if opt.kind == "tokens":
            from ..request import is_zero_tokens
            from ..units import parse_tokens

            # --ctx 0 (llama-server's trained context) passes as 0; check.build_settings decides by runtime
            return 0 if is_zero_tokens(value) else parse_tokens(value, field=opt.name)
        return value
    return AfterValidator(check)


def _runtime_names() -> tuple[str, ...]:
    from ..runtimes import runtime_aliases

    return tuple(runtime_aliases())


def _runtime_pattern() -> str:
    """A runtime name, optionally ==VERSION ("vllm==0.19.0", "llama.cpp==b6500"; runtimes/versions.py)."""
    import re

    return "^(" + "|".join(re.escape(n) for n in _runtime_names()) + r")(==[A-Za-z0-9.+_-]{1,30})?$"


def _field_type(opt: Option, annotation: str, optional: bool) -> Any:
    """The pydantic type of one request field, with the option's bounds as JSON-schema constraints."""
    if opt.choices is not None:
        base: Any = Literal[opt.choices]
    elif opt.kind == "runtime":
        # a name, or NAME==VERSION (runtimes/versions.py: that release's rules; the CLI's own check of the version)
        base = Annotated[str, Field(max_length=opt.max_length, pattern=_runtime_pattern()), _parsed(opt)]
    elif opt.kind == "tokens":
        base = Annotated[int | Annotated[str, Field(max_length=opt.max_length, pattern=TOKENS_PATTERN)],
                         _parsed(opt)]
    elif opt.kind in ("size", "sizes"):
        pattern = SIZE_PATTERN if opt.kind == "size" else SIZES_PATTERN
        base = Annotated[str, Field(max_length=opt.max_length, pattern=pattern), _parsed(opt)]
    elif "tuple" in annotation:
        base = list[Annotated[str, Field(min_length=1, max_length=opt.item_max_length)]]
    elif annotation.startswith("bool"):
        base = bool
    elif annotation.startswith("float"):
        base = Annotated[float, Field(gt=opt.gt, ge=opt.ge, le=opt.le, allow_inf_nan=False)]
    elif annotation.startswith("int"):
        base = Annotated[int, Field(ge=opt.ge, le=opt.le)]
    else:
        base = Annotated[str, Field(min_length=opt.min_length, max_length=opt.max_length)]
    return base | None if optional else base


def check_model(name: str = "CheckBody", request: type = CheckRequest, **more: Any) -> type[BaseModel]:
    """A request of the contract (the check request; request.ModelsRequest for /models) as a pydantic model: unknown
    fields refused, every bound of the option table. ``more``: fields of the endpoint's own (pydantic specs)."""
    spec: dict[str, Any] = {}
    table = options(request)
    for f in fields(request):
        if f.name not in table:
            continue
        opt = table[f.name]
        if "tuple" in str(f.type):
            default_value: Any = Field(default_factory=list, max_length=opt.max_length, description=opt.help or None)
        elif f.default is MISSING:
            default_value = Field(..., description=opt.help or None)
        else:
            default_value = Field(f.default, description=opt.help or None)
        spec[f.name] = (_field_type(opt, str(f.type), f.default is None), default_value)
    return create_model(name, __config__=ConfigDict(extra="forbid", allow_inf_nan=False), **spec, **more)


# The same fields as query parameters of /best and /compare, bounded as in the contract
MAX_MODEL = MAX_NAME
ModelQuery = Annotated[str | None, Query(min_length=1, max_length=MAX_NAME)]
if TYPE_CHECKING:       # built at import time from the contract: to a type checker, what they validate into
    CheckBody = BaseModel
    ModelsQuery = BaseModel
    TokensQuery = int | None          # parse_tokens has turned "32k" into 32768
    RuntimeQuery = str | None
    VendorQuery = str | None
    FormQuery = str | None
    RamQuery = str | None
else:
    CheckBody = check_model("CheckBody")
    # GET /api/v1/models: `runlocal models`'s contract, and ``q``, the name the endpoint took for ``query`` first
    ModelsQuery = check_model("ModelsQuery", ModelsRequest, q=(
        Annotated[str | None, Field(max_length=options(ModelsRequest)["query"].max_length)],
        Field(None, description="the same as query (the parameter's first name)")))
    TokensQuery = Annotated[_field_type(options()["ctx"], "str | int | None", True), Query()]
    # None: not given — an Ollama tag plans Ollama, anything else llama.cpp (runtimes/pull_names.read_model_name)
    RuntimeQuery = Annotated[_field_type(options()["runtime"], "str | None", True) | None, Query()]
    RamQuery = Annotated[_field_type(options()["ram"], "str | None", True) | None, Query()]     # check's --ram
    # best's device filters, as the site's Best GPU page has them (shopping.VENDORS, shopping.FORM_FACTORS)
    VendorQuery = Annotated[Literal[VENDORS] | None, Query()]
    FormQuery = Annotated[Literal[tuple(FORM_FACTORS)] | None, Query()]
QuantQuery = Annotated[str | None, Query(max_length=MAX_SHORT)]


def _amount(name: str, description: str) -> Any:
    """A query parameter of /api/v1/cost, bounded as amounts.COST_BOUNDS bounds it for every caller."""
    lo, hi, what = COST_BOUNDS[name]
    return Query(ge=lo, le=hi, allow_inf_nan=False, description=f"{description} ({what}; CLI: --{name})")


HoursQuery = Annotated[float, _amount("hours-per-day", "hours a day the GPU runs")]
KwhQuery = Annotated[float, _amount("kwh-price", "electricity")]
YearsQuery = Annotated[float, _amount("years", "years the purchase price is spread over")]
UtilizationQuery = Annotated[float, _amount("utilization", "share of TDP drawn while running")]
PriceQuery = Annotated[float | None, _amount("price", "purchase price of one device")]
RentQuery = Annotated[float | None, _amount("rent-price", "cloud price per GPU-hour")]
BudgetQuery = Annotated[float | None, _amount("budget", "the most to spend on the devices")]
UsersQuery = Annotated[int, _amount("users", "requests of ctx served at once")]


class ModelEntry(BaseModel):
    alias: str
    repo_id: str
    published_params: int | None = None
    model_type: str | None = None



def to_request(body: BaseModel) -> CheckRequest:
    """A validated body as the library's request (planning reads stored measurements separately)."""
    data = body.model_dump()
    data["override_tensor"] = tuple(data.get("override_tensor") or ())
    return CheckRequest(**data, use_measurements=False)


# --- answers -------------------------------------------------------------------------------------

class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FitsDoc(_Open):
    """GET /api/v1/models?fits=true: the catalog models that run on the machine, as `runlocal models --fits --json`
    gives them (fits_here.fits_here): the devices, their memory added up, and one row per model, largest first."""

    devices: list[dict[str, Any]]
    capacity_bytes: int
    ctx: int
    runtime: str
    models: list[dict[str, Any]]
    notes: list[str] = []

class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorAnswer(BaseModel):
    """Every 4xx/5xx: ``detail`` lists what was wrong, each item naming the field in ``loc``."""

    detail: list[ErrorItem] | str


class DeviceMemoryDoc(_Open):
    name: str
    kind: str
    capacity: int
    weights: int
    kv_cache: int
    compute: int
    overhead: int
    total: int


class MemoryDoc(_Open):
    weights: int
    kv_cache: int
    compute: int
    overhead: int
    total: int
    devices: list[DeviceMemoryDoc]


class FixDoc(_Open):
    title: str
    command: str | None = None
    effect: str | None = None


class StepDoc(_Open):
    label: str
    formula: str
    value: str
    source: str


class KVCountsDoc(_Open):
    """What ``kv_bytes_per_token`` counts, as the text output labels it (plan.kv_per_token_counts)."""

    per: Literal["gpu_rank", "model"]
    tp: int
    pp: int
    window_layers_apart: bool
    text: str


class RequestsAtOnceDoc(_Open):
    """Requests at once as the text output says them (plan.requests_at_once): ``requests`` llama-server's slots or
    a pooled engine's requests of the full context, ``fits_at_context`` max_concurrency, ``text`` the words."""

    requests: int | float
    fits_at_context: float
    text: str


class SpeedDoc(_Open):
    """A plan's speed (Plan.to_dict's ``speed``): one stream's decode and prefill, predicted or measured."""

    source: Literal["predicted", "measured", "mixed"] = Field(
        description="predicted: the speed model's figures; measured: stored verified runs on this device replaced "
                    "them (the plan's `measured` says which); mixed: a measured prefill beside a predicted decode "
                    "(no stored run was measured near this plan's KV-cache depth)")
    decode_tokens_per_s: float | None = Field(None, description="one stream's decode speed, tokens/s, with "
                                              "decode_at_context tokens in the KV cache; null: not predicted")
    decode_at_context: int | None = Field(None, description="the KV-cache depth the decode figure is for (half the "
                                          "context); null where a measured figure's records do not state theirs")
    decode_short_tokens_per_s: float | None = Field(None, description="decode at a short context, one request")
    decode_short_context: int | None = Field(None, description="the context decode_short_tokens_per_s is for")
    prefill_tokens_per_s: float | None = Field(None, description="prompt processing speed, tokens/s")
    prefill_prompt_tokens: int | None = Field(None, description="the prompt the prefill figure and the time to first "
                                              "token are for (the request's prompt_tokens); null for a measured one")
    time_to_first_token_s: float | None = Field(None, description="seconds to the first token of that prompt")
    weights_on_disk_bytes: int | None = Field(None, description="weights read back from disk each token (no speed "
                                              "is given then)")
    not_predicted: str | None = Field(None, description="why no speed is given (a build that cannot load the model)")
    prefill_not_predicted: str | None = Field(None, description="why no prefill figure is given")
    prefill_range_tokens_per_s: list[float] | None = Field(None, description="an unvalidated prefill range [low, "
                                                           "high] where no single figure is given: a MoE prompt on "
                                                           "Vulkan / SYCL / ROCm's fallback, or weights in RAM copied "
                                                           "from mmap'd memory")


class PlanDoc(_Open):
    """The JSON of `runlocal check --json`, /api/v1/check and the MCP check tool (check.check_document: Plan.to_dict
    and the ``notes`` the text output prints: how the name was read, what was assumed)."""

    model: dict[str, Any]
    runtime: str
    settings: dict[str, Any]
    memory: MemoryDoc
    kv_bytes_per_token: int | float | None
    # what kv_bytes_per_token counts (plan.kv_per_token_counts): per "gpu_rank" or "model", the text's words
    kv_bytes_per_token_counts: KVCountsDoc | None = None
    kv_split: dict[str, int] | None = None
    kv_cache_tokens: int | None
    max_concurrency: float | None
    requests_at_once: RequestsAtOnceDoc | None = None
    max_context: int | None
    verdict: Literal["fits", "tight", "does_not_fit", "unknown"]
    refusal: str | None
    rejects: str | None = None
    compromise: Any = None
    speed: SpeedDoc
    measured: dict[str, Any] | None
    command: str
    fixes: list[FixDoc]
    explain: list[StepDoc]
    assumptions: list[str]
    notes: list[str] = []


class CurveDoc(_Open):
    """Memory against context: the site's chart (plan.context_curves), the plan at each context as its largest
    context was searched. device / capacity / points: the first GPU's line; devices: every device's line, each
    with its capacity, limit and points (ctx, total, kv_cache, capacity)."""

    device: str
    capacity: int
    points: list[dict[str, Any]]
    max_context: int | None = None
    devices: list[dict[str, Any]] = []
    drawn: str | None = None        # what each point plans: the layers held on the GPU, or --fit placing them again


class CompareDoc(_Open):
    """One device (or n × device, or a VRAM figure) of GET /api/v1/compare, as `runlocal compare --json` gives it."""

    id: str | None = None
    name: str
    kind: str | None = None
    count: int | None = None
    memory_bytes: int | None = None
    usable_bytes: int | None = None
    bandwidth_gbs: float | None = None
    price_usd: float | None = None
    largest_model: Any = None


class RankedDoc(_Open):
    """One setup in GET /api/v1/best's ranking."""

    name: str
    count: int | None = None
    verdict: str | None = None
    quant: str | None = None
    decode_tokens_per_s: float | None = None
    prefill_tokens_per_s: float | None = None
    price_usd: float | None = None
    tokens_per_s_per_1000_usd: float | None = None
    command: str | None = None


class BestDoc(_Open):
    """GET /api/v1/best: the devices and multi-GPU setups that run the model, by decode tokens/s per dollar."""

    model: Any = None
    runtime: str | None = None
    ctx: int | None = None
    budget_usd: float | None = None
    users: int = 1
    ranked: list[RankedDoc]
    unpriced: list[RankedDoc] = []
    over_budget: list[RankedDoc] | int | None = None
    notes: list[str] = []


class CostDoc(_Open):
    """GET /api/v1/cost: owning the GPU(s) against renting them, per year and per million tokens."""

    model: Any = None
    device: str | None = None
    spec: str | None = None
    count: int | None = None
    run: Any = None
    assumptions: dict[str, Any] = {}
    own: dict[str, Any] = {}
    rent: dict[str, Any] = {}
    breakeven_hours_per_day: float | None = None
    cheaper: str | None = None
    notes: list[str] = []


class DeviceDoc(_Open):
    """A device of the catalog (GET /api/v1/hardware), with its spec sources."""

    id: str
    name: str
    kind: str | None = None
    vendor: str | None = None
    memory_bytes: int | None = None
    bandwidth_gbs: float | None = None
    source: Any = None
    aliases: list[str] = []
    form_factor: str | None = None          # shopping.FORM_FACTORS: what the `kind` filter reads (a laptop card: laptop)
    gpu_usable_bytes: int | None = None     # a unified-memory system's default GPU share of its RAM; else memory_bytes
    price_usd: float | None = None          # the launch price (choose.device_price), with when it was set and its page
    price_as_of: str | None = None
    price_source: str | None = None
    used_price_usd: float | None = None     # a used-market price, where the catalog has a dated one, its page and date
    used_price_source: str | None = None
    used_price_as_of: str | None = None
    rent_usd_per_gpu_hour: float | None = None   # cheapest on-demand offer of one GPU (data/cloud_prices.json)
    rent_provider: str | None = None
    rent_price_date: str | None = None
    rent_url: str | None = None


class ErrorEntryDoc(_Open):
    """An errors knowledge-base entry (GET /api/v1/errors)."""

    id: str
    title: str
    category: str | None = None
    cause: str | None = None
    solutions: Any = None
    related: list[str] = []


class DiagnosisDoc(_Open):
    """POST /api/v1/diagnose: the failure named, what was read from the text, and the computed fixes."""

    category: str | None = None
    title: str | None = None
    cause: str | None = None
    extracted: dict[str, Any] = {}
    fixes: list[Any] = []
    runtime_note: str | None = None   # set when the text names no runtime: whose commands the fixes give
