"""The one check request: its fields, their bounds, and the CLI flags and help that name them.

``CheckRequest`` is a plain frozen dataclass, so the `runlocal check` path imports no pydantic. Each field
carries an ``Option`` in its metadata (flags, help, bounds, choices); from that one table:

* ``validate_request`` checks a request built anywhere (CLI, Python API, MCP) with the same bounds;
* ``runlocal.api.schemas.check_model`` builds the HTTP API's pydantic model (POST body and GET query);
* ``runlocal.check.build_settings`` turns a validated request into runtime ``Settings`` (the only place).

Every error names the field by its CLI flag without dashes (``gpu-memory-utilization: …``); the HTTP API
turns that prefix into the 422's ``loc``.
"""

from __future__ import annotations

import math
import re
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from .errors import InputError

# 2^31 tokens: beyond any model's trained context, and the bound units.parse_tokens already applies
MAX_CTX = 1 << 31
MAX_NAME = 500        # a model reference: alias, repo id, path or URL (Hub repo ids are at most 96 characters)
MAX_SHORT = 40        # a size ("24GiB"), a quant, a runtime name
INT32_MAX = 2**31 - 1   # a C int, as llama.cpp parses its counts (std::stoi)
DEFAULT_PROMPT_TOKENS = 512     # llama-bench's pp512
# 2^24 tokens: ten times the longest trained context in the catalog (Llama 4 Scout's 10M); a prompt also has to fit
# the context asked for (check.build_settings)
MAX_PROMPT_TOKENS = 1 << 24
DEFAULT_RUNTIME = "llama.cpp"   # a request that names no runtime (request.runtime_name)


@dataclass(frozen=True)
class Option:
    """How one request field is typed on the command line and bounded everywhere."""

    flags: tuple[str, ...] = ()            # CLI flags, the first is the field's name in messages
    help: str = ""
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    min_length: int | None = None
    max_length: int | None = None          # strings: characters; tuples: items
    item_max_length: int | None = None     # tuples of strings: characters per item
    choices: tuple[str, ...] | None = None
    kind: str = ""                         # "tokens" (8192, 32k), "size" (24G), "sizes" (2x24G), "ngl" (N, auto, all)

    @property
    def name(self) -> str:
        return self.flags[0].lstrip("-") if self.flags else ""


def _opt(default: Any = MISSING, *flags: str, **bounds: Any) -> Any:
    return field(default=default, metadata={"option": Option(flags, **bounds)})


def _number(x: float) -> str:
    """A bound or value as typed: whole numbers in full (16,777,216, not 1.67772e+07), others as %g."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) >= 1e5 else f"{x:g}"


def described_fields(request: type) -> type:
    """The request class with each field's meaning, flags and bounds appended to its docstring, from the option
    table that also writes the CLI's --help, the OpenAPI descriptions and the MCP tool schemas: help(CheckRequest)
    describes every field (review21 #12: it showed a 45-parameter signature and no word about any)."""
    lines = ["", "", "Fields (each option's CLI flags and bounds; the HTTP API and MCP take the field names):"]
    for f in fields(request):
        opt = f.metadata.get("option")
        if opt is None:
            lines.append(f"    {f.name}: {_UNLISTED.get(f.name, '')}")
            continue
        bounds = [f"{k} {_number(v)}" for k, v in (("≥", opt.ge), (">", opt.gt), ("≤", opt.le)) if v is not None]
        if opt.choices:
            bounds.append(" | ".join(opt.choices))
        said = "; ".join(p for p in (", ".join(opt.flags), *bounds) if p)
        default = "required" if f.default is MISSING and f.default_factory is MISSING else (
            f"default {f.default!r}" if f.default is not MISSING else "default empty")
        lines.append(f"    {f.name}: {opt.help or '(no description)'} ({said}; {default})")
    request.__doc__ = (request.__doc__ or "").rstrip() + "\n".join(lines) + "\n"
    return request


_UNLISTED = {
    "use_measurements": "stored verified runs (runlocal probe, verified POST /api/v1/benchmarks) on this device replace "
                        "the predicted speed and floor the ceilings (measured.py); False plans from the model alone "
                        "(default True; not a CLI flag)",
    "extra": "unused: no planner reads it (default empty; not a CLI flag)",
}


@described_fields
@dataclass(frozen=True)
class CheckRequest:
    """Everything `runlocal check` accepts, with the engines' own names in the flags."""

    model: str = _opt(MISSING, "--model", help="alias, config.json/folder, .gguf path or URL, hf://…, or owner/name",
                      min_length=1, max_length=MAX_NAME)
    # None: not given — planned as DEFAULT_RUNTIME (runtime_name), except where the model names its engine (an Ollama
    # tag plans Ollama, check._pull_name); an explicit "llama.cpp" stays llama.cpp
    runtime: str | None = _opt(None, "--runtime", "-r", max_length=MAX_SHORT, kind="runtime",
                               help="llama.cpp (default) | vllm | ollama | sglang | transformers | mlx; NAME==VERSION "
                                    "(vllm==0.19.0, llama.cpp==b6500, ollama==0.12.0) for that release's rules")
    # runtimes/backends.py: the ggml backend of llama.cpp / Ollama; None: from the GPU's vendor
    backend: str | None = _opt(None, "--backend", choices=("cuda", "rocm", "vulkan", "metal", "sycl", "cpu"),
                               help="llama.cpp/Ollama: cuda | rocm | vulkan | metal | sycl | cpu (default: from the "
                                    "GPU's vendor)")
    gpu: str | None = _opt(None, "--gpu", max_length=200, help="catalog name ('4090', '2x3090'), 'auto', or 'none'")
    vram: str | None = _opt(None, "--vram", max_length=MAX_SHORT, kind="sizes",
                            help="GPU memory, e.g. 24G; several GPUs: 2x24G or 24G,16G; beside a catalog "
                                 "--gpu, the memory it may use of each (no more than it has)")
    ram: str | None = _opt(None, "--ram", max_length=MAX_SHORT, kind="size",
                           help="system RAM, e.g. 64G (unset: this machine's with --gpu auto; "
                                "otherwise the answer says how much RAM it needs)")
    # the engines' spellings, so a pasted line parses: llama.cpp common/arg.cpp {"-c", "--ctx-size"}, vLLM
    # --max-model-len, SGLang server_args.py --context-length
    # 0: llama-server's -c 0, the model's trained context — llama.cpp only; check.build_settings refuses it elsewhere
    ctx: str | int | None = _opt(None, "--ctx", "--max-model-len", "-c", "--ctx-size", "--context-length", ge=0,
                                 le=MAX_CTX, max_length=MAX_SHORT, kind="tokens",
                                 help="context per request (8192, 32k; llama.cpp: 0, the model's trained context)")
    # the prompt the speed figures price: prefill over it (its attention at mean depth N/2) and the time to its first
    # token; 512 is llama-bench's pp512, the figure every plan priced before the field existed
    prompt_tokens: int | str = _opt(DEFAULT_PROMPT_TOKENS, "--prompt-tokens", ge=1, le=MAX_PROMPT_TOKENS,
                                    max_length=MAX_SHORT, kind="tokens",
                                    help="prompt length the prefill speed and time to first token are for "
                                         "(default 512: llama-bench's pp512; 8192, 32k)")
    quant: str | None = _opt(None, "--quant", "-q", max_length=MAX_SHORT, help="Q4_K_M, Q8_0, bf16, nf4, awq, fp8 …")
    kv_cache: str | None = _opt(None, "--kv-cache", "--kv-cache-dtype", max_length=20, help="K and V cache type")
    cache_type_k: str | None = _opt(None, "--cache-type-k", "-ctk", max_length=20,
                                    help="llama.cpp: the K cache's type (f16, q8_0, q4_0 …), in place of --kv-cache's")
    cache_type_v: str | None = _opt(None, "--cache-type-v", "-ctv", max_length=20,
                                    help="llama.cpp: the V cache's type, in place of --kv-cache's")
    # --parallel / --max-num-seqs / OLLAMA_NUM_PARALLEL; None (or -1, llama-server's "auto"): the runtime's default,
    # llama-server's 4 slots in one unified KV cache, 1 elsewhere
    parallel: int | None = _opt(None, "--parallel", "-np", "--max-num-seqs", "--max-running-requests", ge=-1, le=4096,
                                help="concurrent sequences (llama.cpp default: auto = -1, 4 slots sharing one "
                                     "unified KV cache; vLLM's --max-num-seqs default: 256, on V1 1024 on a GPU of "
                                     "≥ 70 GiB, not an A100 from 0.9)")
    flash_attn: str = _opt("auto", "--flash-attn", "-fa", choices=("on", "off", "auto"), help="on | off | auto")
    batch: int | None = _opt(None, "--batch", "-b", "--batch-size", ge=1, le=1 << 20,     # arg.cpp {"-b", "--batch-size"}
                             help="llama.cpp: logical batch, tokens per decode call (llama-server's default 2048)")
    ubatch: int | None = _opt(None, "--ubatch", "-ub", "--ubatch-size", ge=1, le=1 << 20,
                              help="llama.cpp: physical batch, which sizes the compute buffers (default 512)")
    # -ngl N; -1 auto (llama-server --fit decides, the default), -2 all; up to an int's range, as common/arg.cpp reads
    # it (std::stoi): posts write -ngl 999 or 2000000 for "all" (measurements/outcomes llamacpp-011)
    # ({"-ngl", "--gpu-layers", "--n-gpu-layers"}: a multi-letter single-dash flag parses only where declared)
    n_gpu_layers: int | None = _opt(None, "--ngl", "-ngl", "--n-gpu-layers", "--gpu-layers", ge=-2, le=INT32_MAX,
                                    kind="ngl",
                                    help="layers on the GPU: N, auto (llama-server --fit decides; default) or all")
    n_cpu_moe: int = _opt(0, "--n-cpu-moe", "-ncmoe", ge=0, le=INT32_MAX,
                          help="llama.cpp: keep the experts of the first N layers on the CPU")
    # common/arg.cpp {"-cmoe", "--cpu-moe"} (PR #14992): every layer's routed experts on the CPU
    cpu_moe: bool = _opt(False, "--cpu-moe", "-cmoe", help="llama.cpp: keep every layer's experts on the CPU")
    # llama.cpp -ot "<regex>=<buffer type>,…" (each value may list several)
    override_tensor: tuple[str, ...] = _opt((), "--override-tensor", "-ot", max_length=32, item_max_length=500,
                                            help="llama.cpp: '<regex>=<CPU|CUDA0…>,…' (repeatable)")
    kv_unified: bool = _opt(False, "--kv-unified", "-kvu", help="llama.cpp: one KV buffer shared by all sequences")
    swa_full: bool = _opt(False, "--swa-full", help="llama.cpp: sliding-window layers keep the full context")
    no_mmap: bool = _opt(False, "--no-mmap", help="llama.cpp: read the weights into RAM instead of mapping the file")
    no_kv_offload: bool = _opt(False, "--no-kv-offload", "-nkvo",
                               help="llama.cpp: keep the KV cache (and recurrent state) in system RAM, not on the GPU")
    no_host: bool = _opt(False, "--no-host",
                         help="llama.cpp: CPU-held weights the CPU repacks (Q4_0, Q4_K, IQ4_NL, MXFP4 on AVX2) stay "
                              "in its CPU_REPACK buffer, their matmuls on the CPU, instead of the GPU's host buffer")
    no_mmproj: bool = _opt(False, "--no-mmproj",
                           help="llama.cpp: with -hf, load no multimodal projector (a vision model served as text only)")
    fit: str = _opt("on", "--fit", "-fit", choices=("on", "off"),
                    help="llama.cpp: on (default) fits an unset -c / -ngl to free memory")
    tensor_split: str | None = _opt(None, "--tensor-split", "-ts", max_length=200,
                                    help="llama.cpp: the GPUs' shares of the layers, e.g. 3,1")
    gpu_memory_utilization: float | None = _opt(None, "--gpu-memory-utilization", gt=0, le=1,
                                                help="vLLM: the share of each GPU's memory the engine may use "
                                                     "(default: the release's, 0.92 from 0.20.0 and in the current "
                                                     "release, 0.9 before)")
    max_num_batched_tokens: int | None = _opt(None, "--max-num-batched-tokens", ge=1, le=1 << 24,
                                              help="vLLM: tokens scheduled in one step (default: the engine's, by "
                                                   "GPU and release)")
    # None: vLLM/SGLang use one rank per GPU given, others 1
    # vLLM arg_utils.py {"--tensor-parallel-size", "-tp"}, {"--pipeline-parallel-size", "-pp"}; SGLang --tp-size, --pp-size
    tp: int | None = _opt(None, "--tp", "--tensor-parallel-size", "-tp", "--tp-size", ge=1, le=1024,
                          help="vLLM/SGLang: default one rank per GPU given (--gpu 2x4090 → 2)")
    pp: int = _opt(1, "--pp", "--pipeline-parallel-size", "-pp", "--pp-size", ge=1, le=1024,
                   help="vLLM/SGLang: pipeline stages, each holding a share of the layers (default 1)")
    enforce_eager: bool = _opt(False, "--enforce-eager", help="vLLM: no CUDA graphs (their memory is not taken)")
    swap_space: float | None = _opt(None, "--swap-space", ge=0, le=4096,
                                    help="vLLM up to 0.17.1 (-r vllm==0.17.1): CPU swap space per GPU in GiB, default 4 "
                                         "(checked against the host's RAM); removed in vLLM 0.18.0")
    # vllm/envs.py VLLM_CPU_KVCACHE_SPACE: int(os.getenv(...)), GiB; read from the environment where not given
    # (check.build_settings), as Ollama's OLLAMA_* are
    cpu_kvcache_space: int | None = _opt(None, "--cpu-kvcache-space", ge=1, le=1 << 20,
                                         help="vLLM CPU backend: VLLM_CPU_KVCACHE_SPACE, GiB of KV cache (default: "
                                              "the variable's value, else 4)")
    dp: int = _opt(1, "--data-parallel-size", "-dp", ge=1, le=1024,
                   help="vLLM: engine replicas, each on TP × PP GPUs with its own KV cache (MoE layers shard over all)")
    expert_parallel: bool = _opt(False, "--enable-expert-parallel", "--ep",
                                 help="vLLM: whole experts per GPU across the DP × TP ranks instead of split experts")
    # vLLM LoRA serving (vllm/config/lora.py): slots preallocated on every GPU while the model loads
    enable_lora: bool = _opt(False, "--enable-lora", help="vLLM: serve LoRA adapters (GPU slots for them)")
    max_loras: int | None = _opt(None, "--max-loras", ge=1, le=1024,
                                 help="vLLM: adapters in one batch, default 1 (implies --enable-lora)")
    max_lora_rank: int | None = _opt(None, "--max-lora-rank", ge=1, le=512,
                                     help="vLLM: largest adapter rank, default 16: 1, 8, 16, 32, 64, 128, 256, 320 or "
                                          "512 (implies --enable-lora)")
    mem_fraction_static: float | None = _opt(None, "--mem-fraction-static", gt=0, le=1,
                                             help="SGLang: the share of GPU memory for the weights and the KV pool "
                                                  "(default: SGLang's, by GPU memory, lowered for a vision model)")
    # transformers generate(max_new_tokens=…): prompt = ctx − this
    max_new_tokens: int | None = _opt(None, "--max-new-tokens", ge=1, le=MAX_CTX,
                                      help="transformers: generate()'s new tokens; the prompt is ctx minus these")
    # runtimes.transformers.ATTN_IMPLEMENTATIONS (a test keeps the two equal)
    attn_implementation: str | None = _opt(None, "--attn-implementation", choices=("sdpa", "eager"),
                                           help="transformers: sdpa (default) or eager")
    # runtimes.transformers_device_map.DEVICE_MAPS (a test keeps the two equal)
    device_map: str | None = _opt(None, "--device-map",
                                  choices=("auto", "balanced", "balanced_low_0", "sequential", "cuda"),
                                  help="transformers: auto (default) or balanced, the same: layers spread over the "
                                       "GPUs, then RAM and disk; balanced_low_0: GPU 0 holds only what the others "
                                       "cannot; sequential: GPU 0 filled first, then the next; cuda (model.cuda(): "
                                       "every weight on the first GPU)")
    accelerate: str | None = _opt(None, "--accelerate", max_length=40,
                                  help="transformers before 5.0: the accelerate release installed, e.g. 0.21.0 "
                                       "(default: the least the transformers release requires)")
    # not options (no CLI flag, no HTTP or MCP field): described in the docstring (described_fields)
    use_measurements: bool = True
    extra: dict = field(default_factory=dict)


def runtime_name(req: CheckRequest) -> str:
    """The runtime the request plans: the one given, else DEFAULT_RUNTIME (the one place the default is applied)."""
    return req.runtime if req.runtime is not None else DEFAULT_RUNTIME


@described_fields
@dataclass(frozen=True)
class ModelsRequest:
    """`runlocal models`: the catalog listing, or with ``fits`` the catalog models that run on a machine (the CLI,
    MCP's models tool and GET /api/v1/models take these fields, with these bounds)."""

    query: str | None = _opt(None, "--query", max_length=100,
                             help="words in the alias or the repo id (the plain listing only)")
    fits: bool = _opt(False, "--fits", help="only the models that run here: at Q4_K_M or better first, largest first")
    gpu: str = _opt("auto", "--gpu", min_length=1, max_length=200,
                    help="with --fits: 'auto' (this machine), a catalog name, '2x3090', 'none'")
    vram: str | None = _opt(None, "--vram", max_length=MAX_SHORT, kind="sizes", help="with --fits: GPU memory, e.g. 24G")
    ram: str | None = _opt(None, "--ram", max_length=MAX_SHORT, kind="size", help="with --fits: system RAM, e.g. 64G")
    ctx: str | int | None = _opt(None, "--ctx", "-c", ge=1, le=MAX_CTX, max_length=MAX_SHORT, kind="tokens",
                                 help="with --fits: context per request (default 8192)")


def options(request: type = CheckRequest) -> dict[str, Option]:
    """A request's options by field name, in declaration order (fields without one are not options)."""
    return {f.name: f.metadata["option"] for f in fields(request) if "option" in f.metadata}


def query_pairs(req: CheckRequest) -> list[tuple[str, str]]:
    """The request as the HTTP API's query parameters (GET /api/v1/check and /api/v1/curve, whose model is this
    contract's, api/schemas.check_model): every option set away from its default, under its field name; a list
    repeats its name, a switch is "true". The site's "this answer as JSON" links and its check-page links are written
    by this one function (review19 #1), so a link carries every setting of the request it stands for."""
    pairs: list[tuple[str, str]] = []
    for f in fields(CheckRequest):
        if "option" not in f.metadata:
            continue
        value = getattr(req, f.name)
        if f.default is not MISSING and value == f.default or value is None:
            continue
        if isinstance(value, (tuple, list)):
            pairs.extend((f.name, str(item)) for item in value)
        elif isinstance(value, bool):
            pairs.append((f.name, "true" if value else "false"))
        else:
            pairs.append((f.name, str(value)))
    return pairs


def validate_request(req: CheckRequest | ModelsRequest) -> None:
    """Types, bounds, lengths and choices of every option; InputError names the first bad field."""
    for name, opt in options(type(req)).items():
        value = getattr(req, name)
        if value is not None:
            check_value(opt, value)


def check_value(opt: Option, value: Any) -> None:
    where = opt.name
    if isinstance(value, bool):     # a switch; a count or size given as true/false (JSON) is not one
        if opt.kind or opt.ge is not None or opt.gt is not None or opt.le is not None:
            raise InputError(f"{where}: expected a number, got {str(value).lower()}")
        if opt.choices is not None:     # nor is a word like --flash-attn's on / off (it reached the command line)
            raise InputError(f"{where}: expected {' | '.join(opt.choices)}, got {str(value).lower()}")
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where}: must be a finite number, got {value}")
    if isinstance(value, (int, float)):
        _check_bounds(where, opt, value)
    elif isinstance(value, str):
        _check_text(where, opt, value)
    elif isinstance(value, (tuple, list)):
        if opt.max_length is not None and len(value) > opt.max_length:
            raise InputError(f"{where}: at most {opt.max_length} values, got {len(value)}")
        for item in value:
            if not isinstance(item, str) or (opt.item_max_length and len(item) > opt.item_max_length):
                raise InputError(f"{where}: each value must be text of at most {opt.item_max_length} characters")


def _check_bounds(where: str, opt: Option, value: float) -> None:
    if opt.ge is not None and value < opt.ge or opt.le is not None and value > opt.le \
            or opt.gt is not None and value <= opt.gt:
        low = f"> {_number(opt.gt)}" if opt.gt is not None else f"≥ {_number(opt.ge)}" if opt.ge is not None else ""
        high = f"≤ {_number(opt.le)}" if opt.le is not None else ""
        raise InputError(f"{where}: must be {' and '.join(p for p in (low, high) if p)}, got {_number(value)}")


def _check_text(where: str, opt: Option, value: str) -> None:
    if opt.max_length is not None and len(value) > opt.max_length:
        raise InputError(f"{where}: at most {opt.max_length} characters, got {len(value)}")
    if opt.min_length is not None and len(value.strip()) < opt.min_length:
        raise InputError(f"{where}: must not be empty")
    if opt.choices is not None and value not in opt.choices:
        raise InputError(f"{where}: expected {' | '.join(opt.choices)}, got '{value}'")
    if opt.kind == "tokens":
        from .units import parse_tokens

        if opt.ge == 0 and is_zero_tokens(value):   # --ctx 0 (parse_tokens counts from 1): the runtime decides
            return
        _check_bounds(where, opt, parse_tokens(value, field=where))
    elif opt.kind == "size":
        parse_ram(value) if where == "ram" else _parse_size(value, where)
    elif opt.kind == "sizes":
        from .units import parse_sizes

        parse_sizes(value, field=where)
    elif opt.kind == "ngl":
        parse_ngl(value)
    elif opt.kind == "runtime":
        from .runtimes import get_runtime

        get_runtime(value)


def is_zero_tokens(value: str | int | None) -> bool:
    """A token count given as 0 ("0", 0): --ctx 0, llama-server's trained context."""
    return value is not None and not isinstance(value, bool) and re.fullmatch(r"0+[km]?", str(value).strip().lower()) \
        is not None


def _parse_size(value: str, where: str) -> int:
    from .units import parse_size

    return parse_size(value, field=where)


def parse_ram(value: str) -> int:
    """--ram's size. A memory type given there (ddr4-3200) is refused with the form that names it: a CPU memory
    device beside the GPU (--gpu rtx-4090,ddr4-3200, the catalog's cpu-ddr4-3200-2ch), whose bandwidth the speeds
    read (review19 #10)."""
    import re

    try:
        return _parse_size(value, "ram")
    except InputError as e:
        if re.match(r"\s*(lp)?ddr\d", value, re.I):
            raise InputError(f"{e}; --ram is the size. Name the memory's speed as a device beside the GPU: "
                             f"--gpu rtx-4090,{value.strip().lower()} --ram 64G (on the site: a device row)") from None
        raise


def parse_ngl(value: str | int | None) -> int | None:
    """llama.cpp's -ngl: a layer count, 'auto' (-1) or 'all' (-2), as common/arg.cpp reads it."""
    if value is None or isinstance(value, int):
        return value
    key = value.strip().lower()
    if key in ("auto", "all"):
        return -1 if key == "auto" else -2
    try:
        return int(key)
    except ValueError:
        raise InputError(f"ngl: expected a layer count, auto or all, got '{value}'") from None


def check_cache_types(runtime: str, cache_type_k: str, cache_type_v: str, *, field_name: str) -> None:
    """Refuse a KV-cache type the engine does not have (llama.cpp has no fp8 cache; vLLM no q4_0)."""
    from .runtimes.registry import find_engine  # the engine's entry says what it accepts (runtimes/registry.py)

    known = find_engine(runtime)
    allowed = known.cache_types if known else None
    if allowed is None:
        return
    for value in (cache_type_k, cache_type_v):
        if value not in allowed:
            raise InputError(f"{field_name}: {runtime} has no '{value}' KV cache (expected one of {', '.join(allowed)})")


# --- one wording for every door: the field as the caller spelled it ---------------------------------------------

def _field_names() -> dict[str, str]:
    """A message's field word (a CLI flag without dashes, a cost amount's name) → the request field an HTTP or MCP
    caller sends: 'ngl' → 'n_gpu_layers', 'kv-cache' → 'kv_cache', 'hours-per-day' → 'hours_per_day'."""
    from .amounts import COST_BOUNDS

    out: dict[str, str] = {name.replace("_", "-"): name.replace("-", "_") for name in COST_BOUNDS}
    for request in (ModelsRequest, CheckRequest):
        for name, opt in options(request).items():
            for flag in opt.flags:
                out[flag.lstrip("-")] = name
    return out


def field_spelling(message: str) -> str:
    """A contract message whose first word names the field as the CLI spells it (``ngl: must be ≥ -2 …``) with the
    field's own name instead (``n_gpu_layers: …``): what a Python, HTTP or MCP caller sent. Other messages as they
    are (review21 #10: the HTTP and MCP answers named ``ngl`` / ``kv-cache`` to a caller who sent neither)."""
    head, sep, rest = message.partition(":")
    name = _field_names().get(head.strip()) if sep and " " not in head.strip() else None
    return f"{name}:{rest}" if name else message


# pydantic's error types for a number outside a declared bound (FastAPI Query(ge=…), Field(le=…))
BOUND_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"})
# the contract's fields read by a parser (units.parse_tokens / parse_size(s), runtimes.get_runtime): pydantic's answer
# for them is a regex or a union's branches (``ctx.str`` / ``ctx.int``), where the contract says what it expected
PARSED_KINDS = ("tokens", "size", "sizes", "runtime", "ngl")


def contract_line(name: str, value: Any, error_type: str = "") -> tuple[str, str] | None:
    """The contract's one line, under the caller's field name, for a value pydantic refused for field ``name`` (an
    HTTP query parameter or body field, an MCP argument): a parsed field's value checked as the CLI checks it, a
    number outside its bound in the contract's words (request.check_value, amounts.check_amount); None where the
    contract has no word on it (pydantic's own stands). (the line, its error class's name)"""
    from .amounts import COST_BOUNDS, check_amount
    from .errors import RunlocalError

    opt = options().get(name) or options(ModelsRequest).get(name)
    amount = name.replace("_", "-")
    if value is None or isinstance(value, (dict, list)) or (opt is None and amount not in COST_BOUNDS):
        return None
    try:
        if error_type in BOUND_ERRORS:
            number = float(value) if not isinstance(value, bool) else math.nan
            check_amount(amount, number) if opt is None else check_value(opt, number)
        elif opt is not None and opt.kind in PARSED_KINDS:
            if not isinstance(value, str) and (opt.kind != "tokens" or not isinstance(value, int)
                                               or isinstance(value, bool)):
                value = str(value).lower() if isinstance(value, bool) else str(value)   # a JSON 64 or true, as typed
            check_value(opt, value)
        else:
            return None
    except RunlocalError as bad:
        return field_spelling(str(bad)), bad.__class__.__name__
    except ValueError:
        return None
    return None
