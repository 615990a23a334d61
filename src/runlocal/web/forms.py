"""The site's forms: which options each runtime has, and a page's query string → a CheckRequest.

A page's whole state is its query string (shareable URLs), read here with plain checks that name the
field, so a bad value is shown on the page as an error rather than answered with a 422 document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from ..errors import InputError
from ..runtimes.registry import engine

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_DEVICE = "rtx-4090"
MAX_DEVICE_ROWS = 8
CTX_PRESETS = tuple(2**k for k in range(10, 21))   # 1K … 1M, offered as suggestions, any count accepted
# The page's field names → the request contract's (request.CheckRequest, whose names /api/v1/check takes): the page
# reads either, so an API query opened on the site plans the same request (review19 #6). The memory share "budget" is
# gpu_memory_utilization (vLLM) or mem_fraction_static (SGLang): RuntimeOptions.budget says which.
FORM_FIELDS = {"vram": "vram", "ram": "ram", "ctx": "ctx", "quant": "quant", "kv": "kv_cache", "parallel": "parallel",
               "ngl": "n_gpu_layers", "tp": "tp", "prompt": "prompt_tokens"}
BUDGET_FIELDS = ("gpu_memory_utilization", "mem_fraction_static")
PAGE_ONLY = ("model", "runtime", "gpu", "n")       # the device rows' gpu / n; gpu=2x3090 is the API's own spelling


@dataclass(frozen=True)
class RuntimeOptions:
    """The controls the check form shows for one runtime (only what that runtime has)."""

    name: str
    quants: tuple[str, ...]             # weight formats it loads ("" = as published / the runtime's default)
    kv_types: tuple[str, ...]           # KV cache types; the first is its default
    budget: str | None = None           # the memory-share setting: gpu_memory_utilization / mem_fraction_static
    budget_flag: str = ""
    layer_offload: bool = False         # -ngl: layers on the GPU
    tensor_parallel: bool = False
    parallel_label: str = "Parallel requests"
    notes: tuple[str, ...] = field(default=())


@cache
def runtime_options(name: str) -> RuntimeOptions:
    """Read off the runtime's own planner: its levers (the formats and KV types its fixes may pick) and
    `best`'s quality ladder, so the form cannot offer a combination the planner does not know."""
    from ..choose import QUANT_LADDERS
    from ..runtimes import get_runtime
    from ..runtimes.base import levers_of

    rt = get_runtime(name)
    levers = levers_of(rt)
    ladder = QUANT_LADDERS.get(rt.name, ())
    quants = tuple(dict.fromkeys((*ladder, *levers.weight_quants)))
    known = engine(rt.name)
    gguf = known.ggml
    if gguf:
        quants = levers.weight_quants        # the GGUF ladder, largest first
    # the first KV type is the runtime's default: f16 for ggml/MLX; vLLM/SGLang's "auto" (the model's dtype)
    kv_types = ("f16", *levers.kv_cache_types)
    budget = {"gpu_memory_utilization": ("gpu_memory_utilization", "--gpu-memory-utilization"),
              "mem_fraction_static": ("mem_fraction_static", "--mem-fraction-static")}.get(levers.budget or "")
    return RuntimeOptions(
        name=rt.name, quants=("", *quants), kv_types=kv_types,
        budget=budget[0] if budget else None, budget_flag=budget[1] if budget else "",
        layer_offload=known.gpu_layers_flag, tensor_parallel=bool(rt.pools_kv), parallel_label=known.parallel_label,
    )


def quant_label(runtime: str, quant: str, model_default: str | None = None) -> str:
    """The Weights menu's text for ``quant``; "" is the model's default file on this runtime, named where the page
    knows the model (model_default_quant): gpt-oss's is MXFP4_MOE, not the Q4_K_M most models get (review17b #3)."""
    if quant:
        return quant
    if model_default:
        return f"{model_default} (this model's default)"
    return "the model's usual download" if engine(runtime).ggml else "as published"


def model_default_quant(plan) -> str | None:
    """The quant a request without one plans ``plan``'s model as on its runtime: weights.with_default_quant, the
    planner's own rule, run on the plan's settings without their quant. None where the checkpoint is planned as
    stored (vLLM, SGLang) or the page has no plan."""
    if plan is None or engine(plan.runtime).hub_checkpoints:
        return None
    from ..weights import with_default_quant

    return with_default_quant(plan.model, plan.settings.with_(quant=None))[0].quant


def kv_label(runtime: str, kv: str) -> str:
    if kv == "f16" and engine(runtime).kv_auto:
        return "auto (the model's dtype)"
    return kv


@dataclass
class CheckForm:
    """The check page's state, as read from its query string; ``dropped`` says which values the chosen
    runtime does not have (kept out of the plan and said on the page)."""

    model: str = DEFAULT_MODEL
    runtime: str = "llama.cpp"      # the runtime planned: the one asked, else the one the model's name picks
    runtime_asked: bool = False     # False: the form's "default" (the request's None: an Ollama tag plans Ollama)
    devices: list[tuple[str, int]] = field(default_factory=lambda: [(DEFAULT_DEVICE, 1)])
    vram: str = ""
    ram: str = ""
    ctx: str = "8192"
    quant: str = ""
    kv: str = "f16"
    parallel: str = ""
    ngl: str = ""
    budget: str = ""
    tp: str = ""
    prompt: str = ""        # --prompt-tokens: the prompt the prefill figure and the time to first token are for
    dropped: list[str] = field(default_factory=list)

    @property
    def options(self) -> RuntimeOptions:
        return runtime_options(self.runtime)

    def gpu_spec(self) -> str | None:
        parts = [f"{n}x{d}" if n > 1 else d for d, n in self.devices if d]
        return ",".join(parts) or None


def whole_number(text: str, name: str, lo: int, hi: int) -> int:
    """A form field that must be a whole number from lo to hi, or one line naming the field."""
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"{name}: expected a whole number, got '{text}'") from None
    if not lo <= value <= hi:
        raise InputError(f"{name}: expected {lo} to {hi}, got {value}")
    return value


def read_check_form(params: Mapping[str, str], multi: Mapping[str, list[str]]) -> CheckForm:
    """The query → a CheckForm. Raises InputError naming the field for a value no runtime could take;
    a value this runtime lacks is dropped (and listed in ``dropped``), not an error."""

    form = CheckForm()
    if not params:
        return form                              # the first visit: an example that answers at once
    form.model = (params.get("model") or "").strip()
    asked = (params.get("runtime") or "").strip()      # "": not given, as the CLI without --runtime (policy17)
    form.runtime_asked = bool(asked)
    form.runtime = _runtime_as_asked(asked) if asked else _runtime_for(form.model)
    gpus, counts = multi.get("gpu", []), multi.get("n", [])
    if len(gpus) > MAX_DEVICE_ROWS:
        raise InputError(f"gpu: at most {MAX_DEVICE_ROWS} device rows")
    devices = []
    for i, gpu in enumerate(gpus):
        count_text = counts[i].strip() if i < len(counts) and counts[i].strip() else "1"
        if gpu.strip():
            devices.extend(_device_rows(gpu, whole_number(count_text, "n (device count)", 1, 64)))
    if len(devices) > MAX_DEVICE_ROWS:
        raise InputError(f"gpu: at most {MAX_DEVICE_ROWS} device rows")
    form.devices = devices
    for key in (*FORM_FIELDS, "budget"):
        setattr(form, key, (params.get(key) or "").strip()[:64])
    _read_api_names(form, params)
    form.kv = form.kv or "f16"
    _drop_what_the_runtime_lacks(form)
    return form


def _device_rows(gpu: str, count: int) -> list[tuple[str, int]]:
    """One device field as rows: the API's spelling gpu=2x3090,rtx-4090 (check's --gpu) as the rows 2 × 3090 and
    1 × rtx-4090, so a link in the contract's names shows the devices as the form's rows would."""
    import re

    rows = []
    for part in (p.strip() for p in gpu.split(",")):
        counted = re.fullmatch(r"(\d{1,2})\s*[x×]\s*(\S.*)", part)
        if counted and int(counted.group(1)) >= 1:
            rows.append((counted.group(2), count * int(counted.group(1))))
        elif part:
            rows.append((part, count))
    return rows


def _read_api_names(form: CheckForm, params: Mapping[str, str]) -> None:
    """The request contract's names for the page's fields (kv_cache=, n_gpu_layers=, prompt_tokens=, …) read as the
    page's own; a contract field the page has no control for, or a name neither knows, said in the page's "Adjusted"
    notice, never planned as the default without a word. Both names with different values: an error naming both."""
    from ..request import options

    page_name = {api: page for page, api in FORM_FIELDS.items()} | dict.fromkeys(BUDGET_FIELDS, "budget")
    contract = options()
    for key, raw in params.items():
        value = raw.strip()[:64]
        if key in PAGE_ONLY or key in FORM_FIELDS or key == "budget":
            continue
        if key in page_name:
            mine = page_name[key]
            if getattr(form, mine) and getattr(form, mine) != value:
                raise InputError(f"{key}: given with {mine} ('{value}' and '{getattr(form, mine)}'); they name one "
                                 "field: give one")
            setattr(form, mine, value)
            if mine == "budget" and form.options.budget not in (None, key):
                form.dropped.append(f"{key} {value}: {form.runtime}'s memory share is {form.options.budget}; read "
                                    f"as {form.options.budget}")
        elif key in contract:
            form.dropped.append(f"{key}={value}: a setting of /api/v1/check and the CLI (--{contract[key].name}) "
                                "this page has no control for — planned without it; its JSON link and the CLI take it")
        else:
            form.dropped.append(f"{key}: not a field of this page or of /api/v1/check — ignored")


def _runtime_for(model: str) -> str:
    """The runtime a request naming none plans ``model`` under: Ollama for a name `ollama run` takes, else
    request.DEFAULT_RUNTIME (runtimes/pull_names.read_model_name, the reading check applies)."""
    from ..errors import RunlocalError
    from ..request import DEFAULT_RUNTIME
    from ..runtimes.pull_names import read_model_name

    try:
        return read_model_name(model, None, None).runtime or DEFAULT_RUNTIME
    except RunlocalError:       # a name check refuses (qwen3:latest): check says why
        return DEFAULT_RUNTIME


def _runtime_as_asked(text: str) -> str:
    """The runtime's name, with the release asked kept ('ollama==0.11.0' plans that release's rules, as the CLI and
    API do: runtimes/versions.py), not dropped to the current one."""
    from ..choose import runtime_label
    from ..runtimes import get_runtime

    return runtime_label(get_runtime(text))[0]


def _quant_refusal(form: CheckForm) -> str | None:
    """Why the runtime would not load the weights asked, in the request contract's words (weights.with_default_quant
    → quant_support.refuse_unloadable, which check, the CLI and the API apply), or None: a format off the menu that
    the contract takes (Unsloth's UD-Q4_K_XL on llama.cpp, nf4 on vLLM, a published AWQ checkpoint) is kept."""
    from ..errors import RunlocalError
    from ..model.catalog import lookup
    from ..runtimes import Settings
    from ..weights import with_default_quant

    try:
        spec = lookup(form.model)
    except RunlocalError:
        return None                 # not a catalog id: check resolves it and answers for the format itself
    try:
        with_default_quant(spec, Settings(runtime=form.runtime, quant=form.quant))
    except RunlocalError as e:
        return str(e).removeprefix("quant: ")
    return None


def _drop_what_the_runtime_lacks(form: CheckForm) -> None:
    opts = form.options
    off_menu = form.quant and form.quant not in opts.quants and form.quant.upper() not in opts.quants
    if off_menu and (refused := _quant_refusal(form)):
        default = quant_label(opts.name, "")
        form.dropped.append(f"weights {form.quant}: {refused} — planned "
                            + (f"with {default}" if engine(opts.name).ggml else f"with the checkpoint {default}"))
        form.quant = ""
    if form.kv not in opts.kv_types:
        form.dropped.append(f"KV cache {form.kv}: {opts.name} has {', '.join(opts.kv_types)}; planned with "
                            f"{kv_label(opts.name, opts.kv_types[0])}")
        form.kv = opts.kv_types[0]
    if form.ngl and not opts.layer_offload:
        form.dropped.append(f"GPU layers {form.ngl}: a llama.cpp setting, not {opts.name}'s")
        form.ngl = ""
    if form.budget and not opts.budget:
        form.dropped.append(f"memory share {form.budget}: {opts.name} has no such setting")
        form.budget = ""
    if form.tp and not opts.tensor_parallel:
        form.dropped.append(f"tensor parallel {form.tp}: {opts.name} does not split a model by tensor parallelism")
        form.tp = ""


def check_request(form: CheckForm):
    """The CheckRequest the CLI would build from the same choices."""
    from ..check import CheckRequest
    from ..request import DEFAULT_PROMPT_TOKENS

    if not form.model:
        raise InputError("model: name a catalog model (e.g. llama-3.1-8b) or a Hugging Face repo id")
    if not form.devices and not form.vram:
        raise InputError("gpu: pick at least one device, or give a VRAM size")
    opts = form.options
    budget = None
    if form.budget:
        try:
            budget = float(form.budget)
        except ValueError:
            raise InputError(f"{opts.budget}: expected a share such as 0.9, got '{form.budget}'") from None
    return CheckRequest(
        model=form.model, runtime=form.runtime if form.runtime_asked else None,
        gpu=None if form.vram else form.gpu_spec(),      # a VRAM figure stands for the devices: one GPU of that size
        vram=form.vram or None, ram=form.ram or None, ctx=form.ctx or None, quant=form.quant or None,
        kv_cache=form.kv if form.kv != "f16" else None,
        parallel=whole_number(form.parallel, "parallel", 1, 4096) if form.parallel else None,
        n_gpu_layers=whole_number(form.ngl, "ngl", -2, 10000) if form.ngl else None,
        tp=whole_number(form.tp, "tp", 1, 1024) if form.tp else None,
        prompt_tokens=form.prompt or DEFAULT_PROMPT_TOKENS,
        gpu_memory_utilization=budget if opts.budget == "gpu_memory_utilization" else None,
        mem_fraction_static=budget if opts.budget == "mem_fraction_static" else None,
    )
