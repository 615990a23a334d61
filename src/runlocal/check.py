"""The main job as one library call: `check(model, …)` → (Plan, notes). The CLI and the HTTP API
both call this, so a flag means the same thing everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import InputError
from .plan import Plan


@dataclass(frozen=True)
class CheckRequest:
    """Everything `runlocal check` accepts, with the engines' own names in the comments."""

    model: str
    runtime: str = "llama.cpp"
    gpu: str | None = None                   # catalog name, "2x3090", "auto", "none"
    vram: str | None = None                  # "24G"
    ram: str | None = None
    ctx: str | int | None = None             # --ctx / --max-model-len / -c / num_ctx
    quant: str | None = None
    kv_cache: str | None = None              # --kv-cache / --kv-cache-dtype (K and V)
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    # --parallel / --max-num-seqs / OLLAMA_NUM_PARALLEL; None (or -1, llama-server's "auto"): the runtime's default,
    # llama-server's 4 slots in one unified KV cache, 1 elsewhere
    parallel: int | None = None
    flash_attn: str = "auto"
    batch: int | None = None
    ubatch: int | None = None
    n_gpu_layers: int | None = None          # -ngl N; -1 auto (llama-server --fit decides, the default), -2 all
    n_cpu_moe: int = 0
    override_tensor: tuple[str, ...] = ()    # llama.cpp -ot "<regex>=<buffer type>,…" (each value may list several)
    kv_unified: bool = False                 # llama.cpp --kv-unified / -kvu
    swa_full: bool = False                   # llama.cpp --swa-full
    no_mmap: bool = False                    # llama.cpp --no-mmap
    fit: str = "on"                          # llama.cpp --fit on|off
    tensor_split: str | None = None          # llama.cpp -ts "3,1": the GPUs' shares of the layers
    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: int | None = None
    tp: int | None = None                    # None: vLLM/SGLang use one rank per GPU given, others 1
    pp: int = 1
    enforce_eager: bool = False
    mem_fraction_static: float | None = None
    max_new_tokens: int | None = None        # transformers generate(max_new_tokens=…): prompt = ctx − this
    attn_implementation: str | None = None   # transformers: sdpa (default) or eager
    use_measurements: bool = True            # stored probe/benchmark results replace predictions
    extra: dict = field(default_factory=dict)


def build_settings(req: CheckRequest):
    from .kv import normalize_cache_type
    from .runtimes import Settings, get_runtime
    from .runtimes.base import PARALLEL_AUTO
    from .runtimes.llamacpp import parse_tensor_overrides
    from .units import parse_tokens

    runtime = get_runtime(req.runtime)  # an unknown runtime is reported before any file is read
    if runtime.name == "ollama":
        req = _with_ollama_environment(req)
    if req.fit not in ("on", "off"):
        raise InputError(f"fit: expected on or off, got '{req.fit}'")
    if req.flash_attn not in ("on", "off", "auto"):
        raise InputError(f"flash-attn: expected on, off or auto, got '{req.flash_attn}'")
    if req.kv_cache and (req.cache_type_k or req.cache_type_v):
        raise InputError("kv-cache: give either --kv-cache or --cache-type-k/--cache-type-v, not both")
    parallel = PARALLEL_AUTO if req.parallel is None else req.parallel
    for name, value in (("parallel", 1 if parallel == PARALLEL_AUTO else parallel), ("tp", req.tp or 1), ("pp", req.pp)):
        if value < 1:
            raise InputError(f"{name}: must be at least 1, got {value}")
    for name, value in (("batch", req.batch), ("ubatch", req.ubatch), ("max-num-batched-tokens", req.max_num_batched_tokens),
                        ("max-new-tokens", req.max_new_tokens)):
        if value is not None and value < 1:
            raise InputError(f"{name}: must be at least 1, got {value}")
    if req.n_gpu_layers is not None and req.n_gpu_layers < -2:
        raise InputError(f"ngl: must be a layer count, auto (-1) or all (-2), got {req.n_gpu_layers}")
    for name, value in (("gpu-memory-utilization", req.gpu_memory_utilization),
                        ("mem-fraction-static", req.mem_fraction_static)):
        if value is not None and not 0 < value <= 1:
            raise InputError(f"{name}: must be in (0, 1], got {value}")
    ctx = parse_tokens(req.ctx) if req.ctx is not None else None
    split: tuple[float, ...] = ()
    if req.tensor_split:
        try:
            split = tuple(float(x) for x in req.tensor_split.replace("/", ",").split(","))
        except ValueError:
            raise InputError(f"tensor-split: expected shares such as 3,1, got '{req.tensor_split}'") from None
        if any(x < 0 for x in split) or not sum(split) > 0:
            raise InputError(f"tensor-split: shares must be ≥ 0 and not all 0, got '{req.tensor_split}'")
    from .runtimes.transformers import ATTN_IMPLEMENTATIONS

    attn_implementation = (req.attn_implementation or "").strip().lower() or None
    if attn_implementation and attn_implementation not in ATTN_IMPLEMENTATIONS:
        raise InputError(f"attn-implementation: expected one of {', '.join(ATTN_IMPLEMENTATIONS)}, "
                         f"got '{req.attn_implementation}'")
    if req.max_new_tokens is not None and ctx is not None and req.max_new_tokens >= ctx:
        raise InputError(f"max-new-tokens: must be below the context ({ctx:,}), got {req.max_new_tokens:,}")
    return Settings(
        runtime=req.runtime,
        ctx=ctx,
        quant=req.quant,
        cache_type_k=normalize_cache_type(req.cache_type_k or req.kv_cache or "f16", field="cache-type-k"),
        cache_type_v=normalize_cache_type(req.cache_type_v or req.kv_cache or "f16", field="cache-type-v"),
        parallel=parallel, batch=req.batch, ubatch=req.ubatch, flash_attn=req.flash_attn,  # type: ignore[arg-type]
        n_gpu_layers=req.n_gpu_layers, n_cpu_moe=req.n_cpu_moe,
        override_tensor=parse_tensor_overrides(req.override_tensor),
        kv_unified=req.kv_unified, swa_full=req.swa_full, mmap=not req.no_mmap, fit=req.fit == "on", tensor_split=split, gpu_memory_utilization=req.gpu_memory_utilization,
        max_num_batched_tokens=req.max_num_batched_tokens, tp=req.tp or 1, pp=req.pp, enforce_eager=req.enforce_eager,
        mem_fraction_static=req.mem_fraction_static, max_new_tokens=req.max_new_tokens,
        attn_implementation=attn_implementation,
    )


def _with_ollama_environment(req: CheckRequest) -> CheckRequest:
    """Ollama's own environment variables, where the request leaves the setting at its default
    (a flag given to runlocal wins, as an option given to Ollama would)."""
    from dataclasses import replace

    from .runtimes.ollama import environment_settings

    env = environment_settings()
    changes = {}
    if "parallel" in env and req.parallel in (None, -1, 1):   # 1 too, as before (the web page sends it)
        changes["parallel"] = env["parallel"]
    if "kv_cache" in env and not (req.kv_cache or req.cache_type_k or req.cache_type_v):
        changes["kv_cache"] = env["kv_cache"]
    if "flash_attn" in env and req.flash_attn == "auto":
        changes["flash_attn"] = env["flash_attn"]
    return replace(req, **changes) if changes else req


def check(req: CheckRequest) -> tuple[Plan, list[str]]:
    """Resolve the model and the hardware, plan, and return the plan with notes on assumptions."""
    from .plan import make_plan

    spec, settings, targets, notes = _inputs(req)
    plan = make_plan(spec, settings, targets)
    from .hardware.assumed_ram import ram_was_assumed, settle_assumed_ram

    if ram_was_assumed(notes):       # no verdict turns on a RAM size nobody stated
        from .hardware.targets import DEFAULT_RAM

        plan = settle_assumed_ram(plan, targets, lambda t, with_fixes=False: make_plan(spec, settings, t,
                                                                                      with_fixes=with_fixes), DEFAULT_RAM)
    if req.use_measurements:
        from .measured import apply_measurements, local_records

        plan = apply_measurements(plan, local_records(plan))
    return plan, notes


def _inputs(req: CheckRequest):
    """The request resolved: (model, settings, targets, notes on where sizes came from)."""
    from .hardware.targets import targets_from_options
    from .model.resolve import resolve_model

    settings = build_settings(req)
    spec = resolve_model(req.model)
    targets, notes = targets_from_options(req.gpu, req.vram, req.ram)
    return spec, _default_tp(req, settings, targets, notes), targets, notes


def _default_tp(req: CheckRequest, settings, targets, notes: list[str]):
    """`--gpu 8xh200` for vLLM or SGLang means all eight: one tensor-parallel rank per GPU (over pp stages)."""
    from .runtimes import get_runtime

    gpus = [t for t in targets if t.kind != "cpu"]
    runtime = get_runtime(req.runtime)
    if req.tp is not None or len(gpus) < 2 or not runtime.pools_kv:
        return settings
    from .runtimes.base import GPUS_PER_NODE

    if (runtime.name == "vllm" and req.pp == 1 and len(gpus) > GPUS_PER_NODE and len(gpus) % GPUS_PER_NODE == 0):
        # vLLM's multi-node layout (docs, "Distributed inference and serving"): tensor parallel over the GPUs of a
        # node, pipeline parallel over the nodes, so that only the pipeline's activations cross the network
        pp = len(gpus) // GPUS_PER_NODE
        notes.append(f"tensor parallel {GPUS_PER_NODE} within each node × pipeline parallel {pp} across {pp} nodes "
                     "(vLLM's multi-node layout; set --tp/--pp)")
        return settings.with_(tp=GPUS_PER_NODE, pp=pp)
    tp = max(1, len(gpus) // max(1, req.pp))
    notes.append(f"tensor parallel {tp}: one rank per GPU given (set --tp)")
    return settings.with_(tp=tp)


def curve(req: CheckRequest, contexts: list[int] | None = None) -> dict:
    """Memory against context for the page's chart, with the device line it is drawn against."""
    from .plan import memory_curve

    spec, settings, targets, _ = _inputs(req)
    limit = spec.max_position_embeddings or 131072
    contexts = contexts or [2**k for k in range(9, 21) if 2**k <= limit]
    points = memory_curve(spec, settings, targets, contexts)
    first = next((t for t in targets if t.kind != "cpu"), targets[0])
    return {"device": first.name, "capacity": first.capacity, "points": points}
