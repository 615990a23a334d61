"""The main job as one library call: `check(model, …)` → (Plan, notes). The CLI and the HTTP API
both call this, so a flag means the same thing everywhere."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from .errors import InputError
from .plan import Plan
from .request import (
    DEFAULT_PROMPT_TOKENS,
    CheckRequest,
    check_cache_types,
    is_zero_tokens,
    parse_ngl,
    runtime_name,
    validate_request,
)

__all__ = ["CheckRequest", "build_settings", "check", "check_document", "curve"]


def build_settings(req: CheckRequest):
    """The request, validated against its one table of bounds, as the runtime's ``Settings``: the common fields and
    each engine's own options object (runtimes/options.py), every one built here from the request's flags."""
    from .kv import normalize_cache_type
    from .runtimes import Settings, engine, get_runtime
    from .runtimes.base import PARALLEL_AUTO
    from .units import parse_tokens

    validate_request(req)
    runtime = get_runtime(runtime_name(req))  # an unknown runtime is reported before any file is read
    known = engine(runtime.name)
    if known.server_environment:
        req = _with_ollama_environment(req)
    if "cpu_kvcache_space" in known.own_options and req.cpu_kvcache_space is None:
        req = _with_vllm_cpu_kvcache_space(req)
    if req.kv_cache and (req.cache_type_k or req.cache_type_v):
        raise InputError("kv-cache: give either --kv-cache or --cache-type-k/--cache-type-v, not both")
    _refuse_other_engines_options(req, known)
    _refuse_removed_swap_space(req, runtime)
    if req.parallel == 0:
        raise InputError("parallel: must be at least 1 (or -1, the runtime's auto), got 0")
    if is_zero_tokens(req.ctx):
        _refuse_context_zero(runtime)
        req = replace(req, ctx=None)            # llama-server's -c 0 is its default: the trained context
    ctx = parse_tokens(req.ctx) if req.ctx is not None else None
    if req.max_new_tokens is not None and ctx is not None and req.max_new_tokens >= ctx:
        raise InputError(f"max-new-tokens: must be below the context ({ctx:,}), got {req.max_new_tokens:,}")
    prompt_tokens = parse_tokens(req.prompt_tokens, field="prompt-tokens")
    if ctx is not None and prompt_tokens > ctx and str(req.prompt_tokens) == str(DEFAULT_PROMPT_TOKENS):
        # the default prompt (llama-bench's pp512; the CLI hands it over as "512") is not something the user asked
        # for: with a context below it (`-c 256`, a llama-bench run of pp17 + tg4) the speed estimate's prompt fills
        # the context instead (a --prompt-tokens 512 typed out reads the same and is shrunk too)
        prompt_tokens = ctx
    if ctx is not None and prompt_tokens > ctx:
        raise InputError(f"prompt-tokens: the prompt must fit the context ({ctx:,} tokens), got {prompt_tokens:,}")
    field_k, field_v = ("kv-cache", "kv-cache") if req.kv_cache else ("cache-type-k", "cache-type-v")
    cache_k = normalize_cache_type(req.cache_type_k or req.kv_cache or "f16", field=field_k)
    cache_v = normalize_cache_type(req.cache_type_v or req.kv_cache or "f16", field=field_v)
    check_cache_types(runtime.name, cache_k, cache_v, field_name=field_k)
    from .runtimes.llamacpp import parse_tensor_overrides

    overrides = parse_tensor_overrides(req.override_tensor)   # the flags checked in the order they always were
    vllm = _vllm_options(req)
    return Settings(   # the release ('vllm==0.19.0') lives in the planner (check._planner); Settings name the engine
        runtime=runtime.name, ctx=ctx, quant=req.quant, cache_type_k=cache_k, cache_type_v=cache_v,
        parallel=PARALLEL_AUTO if req.parallel is None else req.parallel, tp=req.tp or 1, pp=req.pp,
        llamacpp=_llamacpp_options(req, overrides), vllm=vllm, sglang=_sglang_options(req),
        transformers=_transformers_options(req), prompt_tokens=prompt_tokens,
    )


def _refuse_context_zero(runtime) -> None:
    """--ctx 0 where the runtime does not read 0 as the model's trained context (only llama-server does: its
    context_zero_is_trained). Ollama takes an explicit num_ctx 0 as given and hands llama-server -c 0 × num_parallel
    (ollama fb3076099 server/routes.go modelOptions: only an unset num_ctx takes the default; llm/llama_server.go
    "-c", NumCtx × numParallel) while its own scheduling sizes num_ctx 0 — not planned; vLLM, SGLang, transformers
    and MLX take a length there."""
    if getattr(runtime, "context_zero_is_trained", False):
        return
    raise InputError(f"ctx: 0 is llama-server's -c 0 (the model's trained context), planned for llama.cpp only; "
                     f"{runtime.name} is planned at a context of at least 1 token — leave --ctx out for its default")


def _refuse_other_engines_options(req: CheckRequest, known) -> None:
    """An engine's own flag given for another engine is refused, naming the engines that take it: a user who types
    `--swap-space 8 --runtime ollama` would otherwise read an answer that silently left it out."""
    from dataclasses import fields

    from .request import options
    from .runtimes.registry import ENGINES

    defaults = {f.name: f.default for f in fields(CheckRequest)}
    for name, opt in options().items():
        takers = [e.name for e in ENGINES if name in e.own_options]
        value = getattr(req, name)
        if not takers or known.name in takers or value == defaults[name] or (name == "tp" and value == 1):
            continue
        said = OWN_SPELLING.get((name, known.name))
        raise InputError(f"{opt.name}: an option of {' and '.join(takers)} ({opt.flags[0]}); "
                         + (said or f"{known.name} has no such setting"))


# Where the refused option has a counterpart in the runtime asked, the refusal names it and how to plan it.
# mlx-lm: mlx_lm.generate's --max-tokens (-m, "Maximum number of tokens to generate", DEFAULT_MAX_TOKENS = 100;
# mlx_lm/generate.py setup_arg_parser) caps the new tokens, and they go into the same KV cache as the prompt
# (generate_step: one cache, prompt then each new token), which an MLX plan sizes at --ctx
OWN_SPELLING = {
    ("max_new_tokens", "mlx"): ("mlx has no --max-new-tokens to plan: its mlx_lm.generate --max-tokens (100 by "
                                "default) caps the new tokens, which share the KV cache with the prompt — give --ctx "
                                "as prompt + new tokens (a 3,000-token prompt and --max-tokens 1000: --ctx 4000)"),
}


def _refuse_removed_swap_space(req: CheckRequest, runtime) -> None:
    """--swap-space for a vLLM release without it (v0.18.0 on, the current one included; PR #36216) is refused by
    name: `vllm serve` would stop on it as an unrecognized argument, and the plan would check nothing with it."""
    from .runtimes.versions import parse_version, vllm_swap_space

    if req.swap_space is None:      # only vLLM takes it: the other engines' refusal came first
        return
    version = getattr(runtime, "version", None)
    if not vllm_swap_space(parse_version(runtime.name, version) if version else None):
        raise InputError(f"swap-space: vLLM {version or '(the current release)'} has no --swap-space (removed in "
                         "v0.18.0, PR #36216); leave it out, or name a release that has it (e.g. -r vllm==0.17.1)")


def _llamacpp_options(req: CheckRequest, overrides: tuple[tuple[str, str], ...]):
    """llama-server's flags (Ollama passes the same ones to the llama-server it starts)."""
    from .runtimes.options import LlamaCppOptions

    return LlamaCppOptions(
        batch=req.batch, ubatch=req.ubatch, flash_attn=req.flash_attn,  # type: ignore[arg-type]
        n_gpu_layers=parse_ngl(req.n_gpu_layers), n_cpu_moe=req.n_cpu_moe, cpu_moe=req.cpu_moe,
        override_tensor=overrides,
        kv_unified=req.kv_unified, swa_full=req.swa_full, mmap=not req.no_mmap, kv_offload=not req.no_kv_offload,
        no_host=req.no_host, fit=req.fit == "on", tensor_split=_tensor_split(req.tensor_split),
        mmproj=not req.no_mmproj)


def _vllm_options(req: CheckRequest):
    from .runtimes.options import VLLMOptions

    options = VLLMOptions(gpu_memory_utilization=req.gpu_memory_utilization,
                          max_num_batched_tokens=req.max_num_batched_tokens, enforce_eager=req.enforce_eager,
                          cpu_kvcache_space=req.cpu_kvcache_space, **_lora(req), **_data_parallel(req))
    return options if req.swap_space is None else replace(options, swap_space=req.swap_space)


def _sglang_options(req: CheckRequest):
    """SGLang's names for the request's flags: --chunked-prefill-size (the request's --max-num-batched-tokens) and
    --disable-cuda-graph (--enforce-eager)."""
    from .runtimes.options import SGLangOptions

    return SGLangOptions(mem_fraction_static=req.mem_fraction_static, chunked_prefill_size=req.max_num_batched_tokens,
                         disable_cuda_graph=req.enforce_eager)


def _transformers_options(req: CheckRequest):
    from .runtimes.options import TransformersOptions

    return TransformersOptions(max_new_tokens=req.max_new_tokens,
                               attn_implementation=(req.attn_implementation or "").strip().lower() or None,
                               device_map=req.device_map or "auto", accelerate=(req.accelerate or "").strip() or None)


def _lora(req: CheckRequest) -> dict:
    """vLLM's LoRA settings; --max-loras or --max-lora-rank alone imply --enable-lora."""
    from .runtimes.vllm_lora import DEFAULT_MAX_LORA_RANK, DEFAULT_MAX_LORAS, MAX_LORA_RANKS

    if not (req.enable_lora or req.max_loras or req.max_lora_rank):
        return {}
    rank = req.max_lora_rank or DEFAULT_MAX_LORA_RANK
    if rank not in MAX_LORA_RANKS:
        raise InputError(f"max-lora-rank: vLLM accepts {', '.join(map(str, MAX_LORA_RANKS))}, got {rank}")
    return {"enable_lora": True, "max_loras": req.max_loras or DEFAULT_MAX_LORAS, "max_lora_rank": rank}


def _data_parallel(req: CheckRequest) -> dict:

    if req.dp == 1 and not req.expert_parallel:
        return {}
    return {"dp": req.dp, "expert_parallel": req.expert_parallel}


def _tensor_split(text: str | None) -> tuple[float, ...]:
    """llama.cpp -ts "3,1" (or 3/1): the GPUs' shares of the layers."""
    if not text:
        return ()
    try:
        split = tuple(float(x) for x in text.replace("/", ",").split(","))
    except ValueError:
        raise InputError(f"tensor-split: expected shares such as 3,1, got '{text}'") from None
    if not all(math.isfinite(x) and x >= 0 for x in split) or not sum(split) > 0:
        raise InputError(f"tensor-split: shares must be finite, ≥ 0 and not all 0, got '{text}'")
    return split


def _with_ollama_environment(req: CheckRequest) -> CheckRequest:
    """Ollama's own environment variables, where the request leaves the setting at its default
    (a flag given to runlocal wins, as an option given to Ollama would).

    OLLAMA_NUM_PARALLEL is the server's one setting of its parallel sequences (envconfig/config.go:275 NumParallel; api/
    has no num_parallel option, ollama fb3076099), and --parallel is the user stating that same setting: a stated
    --parallel 1 is the value asked, so it wins like any other stated value. Only an unstated --parallel (or -1, the
    runtime's own default) takes the variable."""
    from dataclasses import replace

    from .runtimes.ollama import environment_settings

    env = environment_settings()
    changes = {}
    if "parallel" in env and req.parallel in (None, -1):
        changes["parallel"] = env["parallel"]
    if "kv_cache" in env and not (req.kv_cache or req.cache_type_k or req.cache_type_v):
        changes["kv_cache"] = env["kv_cache"]
    if "flash_attn" in env and req.flash_attn == "auto":
        changes["flash_attn"] = env["flash_attn"]
    return replace(req, **changes) if changes else req


def _ollama_parallel_overridden(req: CheckRequest, settings) -> list[str]:
    """The note where a stated --parallel overrode this shell's OLLAMA_NUM_PARALLEL: the plan's `ollama serve` writes
    the variable only above 1 (Ollama's default), so with --parallel 1 the shell's value would start it otherwise."""
    from .runtimes import engine

    if not engine(settings.runtime).server_environment or req.parallel in (None, -1):
        return []
    from .runtimes.ollama import environment_settings

    shell = environment_settings().get("parallel")
    if shell is None or shell == req.parallel:
        return []
    return [f"OLLAMA_NUM_PARALLEL={shell} in this shell; planned at --parallel {req.parallel} as asked: start "
            f"`ollama serve` with OLLAMA_NUM_PARALLEL={req.parallel}"]


def _with_vllm_cpu_kvcache_space(req: CheckRequest) -> CheckRequest:
    """VLLM_CPU_KVCACHE_SPACE from the environment where the request leaves it unset (a flag wins). vllm/envs.py
    reads it as int(os.getenv("VLLM_CPU_KVCACHE_SPACE")), GiB; 0 means unset (vllm/platforms/cpu.py: "not set,
    using 4 by default")."""
    import os
    from dataclasses import replace

    text = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "").strip()
    if not text:
        return req
    if not text.isdigit():
        raise InputError(f"VLLM_CPU_KVCACHE_SPACE: expected a whole number of GiB (vLLM reads it with int()), "
                         f"got '{text}'")
    return replace(req, cpu_kvcache_space=int(text) or None)


def check_document(plan: Plan, notes: list[str]) -> dict[str, Any]:
    """The one JSON answer of a check — `runlocal check --json`, /api/v1/check and the MCP check tool: the plan's
    contract (Plan.to_dict) with the notes the text output prints under it (how the name was read, where sizes came
    from, what was assumed)."""
    return {**plan.to_dict(), "notes": list(notes)}


def check(req: CheckRequest, policy=None, *, with_fixes: bool = True,
          with_concurrency: bool = True) -> tuple[Plan, list[str]]:
    """Resolve the model and the hardware, plan, and return the plan with notes on assumptions.
    ``policy`` (model/policy.py ReadPolicy) says what the model reference may make runlocal read. A caller that
    shows neither the fixes nor the most parallel requests leaves them out (settled_plan: the same verdict, largest
    context and speed; the site's model page)."""
    req, read_as, pull = _pull_name(req)
    spec, settings, targets, notes = _inputs(req, policy)
    if pull:        # hf.co/<repo>:<quant> under Ollama: that file, pulled by the name given
        settings = settings.with_(ollama_pull=pull)
    planner = _planner(req)
    from .runtimes.versions import newer_than_read_note

    notes = read_as + notes + newer_than_read_note(planner.name, getattr(planner, "version", None))
    refused, arch_step = _named_build_loads(spec, planner)
    if refused is not None:
        return _refused_plan(spec, settings, targets, planner, refused, arch_step), notes
    # a GPU named, not read: its desktop (if it drives one) is not seen; ≥ 1 GiB left or "tight"
    gpu_named = bool(req.vram) or (req.gpu or "auto").strip().lower() not in ("auto",)
    plan = settled_plan(spec, settings, targets, notes, planner, gpu_named=gpu_named, with_fixes=with_fixes,
                        with_concurrency=with_concurrency)
    notes = _vllm_share_note(plan, notes) + _driver_context_note(plan) + _ram_bandwidth_note(plan, targets, req.gpu)
    if req.use_measurements:
        from .measured import apply_measurements, local_records

        plan = apply_measurements(plan, local_records(plan))
    if arch_step is not None:
        plan = replace(plan, steps=(*plan.steps[:1], arch_step, *plan.steps[1:]))
    return plan, (notes + _arch_unchecked(spec, planner) + _mlx_stored(req, spec, plan) + _unpublished_quant(spec, plan)
                  + _thinking_context(req, spec, plan))


def _thinking_context(req: CheckRequest, spec, plan) -> list[str]:
    """A thinking model planned at a context shorter than its reasoning (thinking.py; review22 #8)."""
    from .runtimes.published import catalog_alias
    from .thinking import short_context_note

    if plan.verdict not in ("fits", "tight"):
        return []
    cap = getattr(plan.planner, "served_context_cap", lambda _: None)(spec)
    asked = req.ctx is not None and not is_zero_tokens(req.ctx)       # -c 0: the trained context, not asked
    note = short_context_note(catalog_alias(spec), plan.settings.ctx, asked, plan.runtime, cap)
    return [note] if note else []


def _arch_unchecked(spec, planner) -> list[str]:
    """A named build the architecture table cannot vouch for is said on the answer (arch_support.unchecked_note)."""
    version = getattr(planner, "version", None)
    if version is None:
        return []
    from .runtimes.arch_support import model_arch, unchecked_note

    note = unchecked_note(planner.name, version, model_arch(spec))
    return [note] if note else []


def _pull_name(req: CheckRequest) -> tuple[CheckRequest, list[str], str | None]:
    """An Ollama tag or a Hub GGUF repo with a quant → the catalog model, runtime and quant it names, read as every
    command reads it (runtimes/pull_names.read_model_name); and the hf.co name an Ollama plan pulls as given."""
    from .runtimes.pull_names import read_model_name

    read = read_model_name(req.model, req.runtime, req.quant)
    if not read.notes:
        return req, [], None
    return (replace(req, model=read.model, runtime=read.runtime, quant=read.quant), list(read.notes),
            read.ollama_pull)


def _mlx_stored(req: CheckRequest, spec, plan) -> list[str]:
    """MLX without --quant plans the published mlx-community 4-bit conversion where data/mlx_repos.json knows one;
    where it knows none, the stored 16-bit checkpoint is planned, and the answer says so (published.mlx_stored_note)."""
    from .runtimes.published import mlx_stored_note

    note = None if req.quant else mlx_stored_note(spec, plan.runtime, plan.weights.quant)
    return [note] if note else []


def _unpublished_quant(spec, plan) -> list[str]:
    """A --quant the model's GGUF repo does not publish: the command names a file to make (published.py); a vision
    model pulled with -hf: the projector llama-server also loads, counted (llamacpp_mmproj.hf_projector_note)."""
    from .runtimes.flag_spelling import llamacpp_build
    from .runtimes.llamacpp_mmproj import hf_projector_note
    from .runtimes.published import unpublished_quant_note

    notes = (unpublished_quant_note(spec, plan.runtime, plan.settings.quant),
             hf_projector_note(spec, plan.runtime, plan.settings,
                               llamacpp_build(getattr(plan.planner, "version", None))))
    return [note for note in notes if note]


def settled_plan(spec, settings, targets, notes: list[str], planner, *, gpu_named: bool, with_fixes: bool = True,
                 with_concurrency: bool = True) -> Plan:
    """The plan `check` shows for these targets: made, then settled for what was assumed rather than read (the host's
    RAM, a named GPU's desktop, unified memory's shares, the loader's host RAM). `compare` shows each row's plan
    through this too, without the fixes and the concurrency table its rows do not show, so that the two commands
    give one verdict and one largest context for the same card, model and context (review16b finding 7)."""
    from .hardware.assumed_ram import ram_was_assumed, settle_assumed_ram
    from .hardware.display_margin import settle_display
    from .hardware.host_load import settle_loading
    from .hardware.unified_memory import settle_shared
    from .plan import judge_plan, make_plan

    wanted_fixes = with_fixes

    def make(t, with_fixes: bool = False):     # settle_assumed_ram asks for fixes on the plan it shows
        return make_plan(spec, settings, t, with_fixes=with_fixes and wanted_fixes,
                         with_concurrency=with_concurrency, runtime=planner)

    if ram_was_assumed(notes):       # no verdict turns on a RAM size nobody stated
        from .hardware.targets import DEFAULT_RAM

        plan = settle_assumed_ram(targets, make, lambda t: judge_plan(spec, settings, t, runtime=planner),
                                  DEFAULT_RAM)
        plan = _state_ram_need(plan, DEFAULT_RAM)
    else:
        plan = make(targets, with_fixes=True)
    plan = _no_speed_from_disk(plan)
    plan = settle_display(plan, gpu_named=gpu_named)
    plan = _settle_prompt_cache(plan)   # mlx_lm.server keeps earlier requests' KV caches (10 by default)
    # host RAM the loader holds while loading, before the unified host is cut to what the GPU side leaves: the mmap
    # limit is the whole RAM + swap (host_load.py), which a unified host's capacity still is here
    plan = settle_loading(plan, ram_known=not ram_was_assumed(notes))
    plan = settle_shared(plan)      # unified memory: the CPU side shown with what the GPU side leaves of the RAM
    plan = _vllm_start_condition(plan, targets)
    return _assumed_ram_shown(plan) if ram_was_assumed(notes) else plan


def _assumed_ram_shown(plan: Plan) -> Plan:
    """A plan settled at the RAM it needs (settle_assumed_ram: "runs, tight, if RAM ≥ 76 GiB") shows the RAM that
    was assumed as the host's capacity, over-full where it is short, so the table, the bars, the chart and the JSON
    say what the condition says (review18 finding 4: "CPU RAM 75.2 GiB of 76 GiB" beside "assumed 32 GiB")."""
    from .hardware.targets import DEFAULT_RAM

    devices = tuple(replace(d, capacity=DEFAULT_RAM) if d.kind == "cpu" and d.name == "CPU RAM" else d
                    for d in plan.allocation.devices)
    if devices == plan.allocation.devices:
        return plan
    return replace(plan, allocation=replace(plan.allocation, devices=devices))


def _vllm_start_condition(plan: Plan, targets) -> Plan:
    """vLLM on a Jetson whose free memory runlocal assumed: the free memory its start needs, a condition, not a
    refusal (runtimes/vllm_unified.py start_condition)."""
    from .runtimes.vllm_unified import plan_condition

    said = plan_condition(plan.planner, plan.allocation.settings, targets) if plan.planner is not None else None
    return replace(plan, conditions=(*plan.conditions, said)) if said else plan


def _vllm_share_note(plan: Plan, notes: list[str]) -> list[str]:
    """A vLLM plan shown at the free memory its start needs (_vllm_start_condition) does not also say the GPU "may use"
    runlocal's assumed share (vllm_unified.assumed_share_note)."""
    from .runtimes.vllm_unified import START_CONDITION, assumed_share_note

    if not any(c.startswith(START_CONDITION) for c in plan.conditions):
        return notes
    return [assumed_share_note(n) for n in notes]


def _settle_prompt_cache(plan: Plan) -> Plan:
    """An MLX plan whose server prompt cache at its default size would pass the working set (runtimes/mlx_server.py):
    the condition, and the capped server command first among the fixes. A plan that prints `mlx_lm.server` (it keeps
    the cache) becomes "tight"; one that prints `mlx_lm.generate` (it keeps none) keeps its verdict, the condition
    saying when serving it would overflow."""
    from .fixes import Fix
    from .runtimes.mlx_server import advice

    said = advice(plan)
    if said is None:
        return plan
    fix = Fix(said.fix_title, said.fix_command, said.fix_effect, 1)
    serves = plan.command.startswith("mlx_lm.server")
    return replace(plan, verdict="tight" if serves and plan.verdict == "fits" else plan.verdict,
                   conditions=(*plan.conditions, said.condition), fixes=(fix, *plan.fixes))


def _named_build_loads(spec, planner):
    """(the refusal when a named llama.cpp build / Ollama release — or any, for an architecture no llama.cpp build
    loads — cannot load the model's architecture, else None; the --explain step saying what was checked, None when
    nothing was: runtimes/arch_support.py, one dict lookup)."""
    from .runtimes import Step
    from .runtimes.arch_support import TABLE, planner_refusal

    refused, how, arch = planner_refusal(spec, planner)
    if not how:
        return None, None
    return refused, Step("architecture", how, arch or "?", f"data/{TABLE} (measurements/arch_support)")


def _refused_plan(spec, settings, targets, planner, refused: str, arch_step):
    """The plan of a build that cannot load the model: the weights and memory as planned, the loader's refusal as the
    verdict's reason, no speed, no limits, no fixes (no setting makes that build load it; the refusal says what
    does)."""
    from .plan import Plan, judge_plan, version_step
    from .runtimes.arch_support import CANNOT_LOAD, NO_BUILD_LOADS, no_release_loads

    quick = judge_plan(spec, settings, targets, runtime=planner)
    # no KV pool: a server that cannot load the model never sizes one (review23 #10d: a refused vLLM plan said "KV pool
    # 403,840 tokens shared by all requests"); the table keeps the memory as planned, the pool's bytes included
    alloc = replace(quick.allocation, refusal=refused, compromise=None, kv_cache_tokens=None)
    never = no_release_loads(planner.name, getattr(planner, "version", None), arch_step.value)
    no_speed: dict[str, Any] = dict.fromkeys(quick.speed) | {"not_predicted": NO_BUILD_LOADS if never else CANNOT_LOAD}
    return Plan(spec, planner.name, quick.weights, alloc, "does_not_fit", None, None,
                planner.command(spec, alloc.settings), speed=no_speed, planner=planner,
                steps=(version_step(planner), arch_step, *alloc.steps))


def _no_speed_from_disk(plan: Plan) -> Plan:
    """Weights left on disk (transformers' offload folder) are read back per token at the drive's speed, which the
    speed model does not know: no GPU/RAM-bandwidth speed is given for such a plan, in the JSON as in the text."""
    from dataclasses import replace

    on_disk = plan.weights.total - sum(d.weights for d in plan.allocation.devices)
    if on_disk <= 0.01 * plan.weights.total:
        return plan
    speed = {**plan.speed, "decode_tokens_per_s": None, "decode_short_tokens_per_s": None,
             "weights_on_disk_bytes": on_disk}
    return replace(plan, speed=speed)


def _state_ram_need(plan: Plan, assumed: int) -> Plan:
    """A tight plan that holds weights in RAM the user never sized runs only with that RAM: say how much
    (settle_assumed_ram states it where more RAM would change the verdict; here it would not, but less would)."""
    from dataclasses import replace

    if plan.conditions or plan.verdict != "tight":
        return plan
    need = max((d.total for d in plan.allocation.devices if d.kind == "cpu"), default=0)
    if need < 2 << 30:
        return plan
    gib = -(-need // (1 << 30))
    return replace(plan, conditions=(f"runs, tight, if RAM ≥ {gib} GiB: the plan holds that much in system memory "
                                     f"(set --ram to your machine's size; {assumed >> 30} GiB was assumed, not read)",))


def _planner(req: CheckRequest):
    """The runtime planner with the server environment it reads (Ollama's), read here once: planning is pure."""
    import os

    from .runtimes import get_runtime

    planner = get_runtime(runtime_name(req), environ=os.environ)
    if req.backend is not None:     # only a ggml engine gets here with one (build_settings refuses the others)
        planner.backend = req.backend   # type: ignore[attr-defined]
    return planner


def _cpu_bandwidth_note(targets) -> list[str]:
    """A CPU-only run whose memory is not named: the bandwidth its speeds assume, said as the RAM size is
    (review17 §15)."""
    from .verdict import DEFAULT_RAM_BANDWIDTH_GBS

    if any(t.kind != "cpu" for t in targets) or any(t.bandwidth_gbs for t in targets):
        return []
    ram = _ram_flag(targets)
    return [f"RAM bandwidth: assumed {DEFAULT_RAM_BANDWIDTH_GBS:g} GB/s, dual-channel DDR5-5600 (2 channels × 8 B × "
            f"5,600 MT/s); the speeds scale with it (name the memory, e.g. --gpu ddr4-3200 {ram} or --gpu 'ddr5-5600 "
            f"8ch' {ram}; {RAM_NAMED_ALONE})"]


# hardware catalog: a memory named with --gpu is a system with the catalog's RAM size (ddr4-3200: 32 GiB; 'ddr5-5600
# 8ch': 256 GiB), unless --ram gives it
RAM_NAMED_ALONE = "without --ram the memory named plans its catalog system's RAM, 32 GiB for ddr4-3200"


def _ram_flag(targets) -> str:
    """`--ram NG` with the plan's own host RAM, for a note that suggests naming the memory (request.parse_ram's error
    shows --ram beside it the same way)."""
    host = next((t for t in targets if t.kind == "cpu"), None)
    return f"--ram {round((host.total or host.capacity) / 2**30)}G" if host is not None and host.capacity else "--ram 64G"


def _ram_bandwidth_note(plan: Plan, targets, gpu: str | None) -> list[str]:
    """A GPU plan that reads weights from system RAM each token (layers or experts there) whose memory is not named:
    the bandwidth the decode's RAM term assumes, said as a CPU run's is, with the way to name the memory (review19
    #10: on gpt-oss-120b with a 4090 the RAM term is 38 of 41 ms a token; DDR4-3200 would give ~14 tok/s, not 24)."""
    from .verdict import DEFAULT_RAM_BANDWIDTH_GBS

    if not any(t.kind != "cpu" for t in targets) or any(t.kind == "cpu" and t.bandwidth_gbs for t in targets):
        return []
    decode = next((st for st in plan.steps if st.label == "decode speed"), None)
    reads_ram = any(d.kind == "cpu" and d.weights > 0 for d in plan.allocation.devices)
    if decode is None or not reads_ram or f"× {DEFAULT_RAM_BANDWIDTH_GBS:g} GB/s)" not in decode.formula:
        return []
    named = f"{gpu.strip()},ddr4-3200" if gpu and gpu.strip().lower() not in ("auto", "") else "rtx-4090,ddr4-3200"
    return [f"RAM bandwidth: the weights read from system RAM each token are timed at an assumed "
            f"{DEFAULT_RAM_BANDWIDTH_GBS:g} GB/s, dual-channel DDR5-5600 (2 channels × 8 B × 5,600 MT/s); the decode "
            f"speed scales with it (name the memory beside the GPU, e.g. --gpu {named} {_ram_flag(targets)}: 51.2 GB/s; "
            f"{RAM_NAMED_ALONE})"]


def _cpu_kvcache_default_note(settings, targets, runtime: str) -> list[str]:
    """vLLM's CPU backend with VLLM_CPU_KVCACHE_SPACE unset: what the release asked for sizes it as (4 GiB up to v0.12,
    half the RAM in v0.13–v0.19, --gpu-memory-utilization × RAM less the worker from v0.20: runtimes/vllm_cpu.py),
    with the assumptions that rule needs."""
    from .runtimes import engine
    from .runtimes.versions import split_runtime
    from .runtimes.vllm_cpu import cpu_kv_note

    if (any(t.kind != "cpu" for t in targets) or settings.vllm.cpu_kvcache_space
            or "cpu_kvcache_space" not in engine(settings.runtime).own_options):
        return []
    return [cpu_kv_note(split_runtime(runtime)[1])]


def _driver_context_note(plan: Plan) -> list[str]:
    """A SYCL or Vulkan GPU: the driver's own context is in no column (runtimes/backends.py), so overhead 0.00 is a
    floor, not a measurement; said in the plain output, not only under --explain (review17 §15)."""
    backend = next((st.value for st in plan.steps if st.label == "backend"), None)
    names = {"sycl": "SYCL / Level Zero", "vulkan": "Vulkan"}
    if backend not in names or not any(d.kind != "cpu" for d in plan.allocation.devices):
        return []
    return [f"{names[backend]}: the driver's own context on the GPU is not measured and not counted: the overhead "
            "column is a floor, not a measurement"]


def _inputs(req: CheckRequest, policy=None):
    """The request resolved: (model, settings, targets, notes on where sizes came from)."""
    from .hardware.targets import targets_from_options
    from .model.resolve import resolve_model

    settings = build_settings(req)
    spec = resolve_model(req.model, policy)
    if settings.llamacpp.cpu_moe:   # --cpu-moe's regex matches the experts of every layer: --n-cpu-moe <n_layers>'s
        settings = settings.with_(n_cpu_moe=max(settings.llamacpp.n_cpu_moe, spec.n_layers))
    moe_flag = "--cpu-moe" if settings.llamacpp.cpu_moe else "--n-cpu-moe" if settings.llamacpp.n_cpu_moe else None
    extra_notes = ([f"{moe_flag}: {spec.id} has no routed experts, so it moves nothing (llama.cpp's expert regex "
                    "matches no tensor of it)"] if moe_flag and not spec.n_experts else [])
    targets, notes = targets_from_options(req.gpu, req.vram, req.ram)
    _refuse_backend_for_gpu(req.backend, targets)
    # a Hub id read offline through its catalog sibling (model/catalog.py sibling_spec) says so
    notes = [*notes, *(n for n in spec.notes if n.startswith("offline and not in the Hugging Face cache"))]
    notes += _short_gguf(spec) + extra_notes + _unsloth_note(req.quant, spec) + _cpu_bandwidth_note(targets)
    notes += _cpu_kvcache_default_note(settings, targets, runtime_name(req))
    notes += _ollama_parallel_overridden(req, settings)
    if is_zero_tokens(req.ctx):
        notes.append("-c 0: llama-server's own default, the model's trained context (common/arg.cpp \"0 = loaded "
                     "from model\"), planned as --ctx left out — --fit may shorten it to fit")
    refuse_pairing(settings.runtime, req.gpu, targets)
    settings = _default_tp(req, spec, settings, targets, notes)
    _refuse_more_ranks_than_gpus(req, settings, targets)
    return spec, settings, targets, notes


def _refuse_mlx_off_apple(runtime: str | None, gpu: str | None) -> None:
    """An engine that runs on one kind of device only and on no GPU backend (MLX: device_kinds ("apple",), Metal,
    mlx-lm's README), given a GPU named that is not of that kind: an input the question cannot have, said as one,
    not planned into "does not fit"."""
    from .runtimes import engine

    eng = engine(runtime or "llama.cpp")
    if not eng.device_kinds or eng.gpu_backends or not gpu or gpu.strip().lower() in ("auto", "none", "cpu"):
        return
    from .hardware.catalog import parse_device_spec

    try:
        devices = parse_device_spec(gpu)
    except ValueError:
        return                              # the unknown name is reported where the targets are resolved
    other = [d.name for d in devices if d.kind != "cpu" and not eng.runs_on(d.kind, d.backends)]
    if other:
        where = "Apple silicon (Metal)" if eng.device_kinds == ("apple",) else " or ".join(eng.device_kinds)
        raise InputError(f"runtime: {eng.name} runs only on {where}; {other[0]} is not one "
                         "(--runtime llama.cpp, vllm or sglang plan it)")


# The GPU vendors a ggml backend's build can drive (llama.cpp docs/build.md; docs/backend/SYCL.md: Intel GPUs, NVIDIA
# and AMD through oneAPI's plugins): a CUDA build runs NVIDIA GPUs, a ROCm (HIP) build the AMD gfx targets it was
# compiled for, Metal Apple's; Vulkan any GPU with a Vulkan driver (MoltenVK on Apple); cpu any machine, the GPU idle.
BACKEND_VENDORS = {"cuda": ("nvidia",), "rocm": ("amd",), "metal": ("apple",), "sycl": ("intel", "nvidia", "amd"),
                   "vulkan": ("nvidia", "amd", "intel", "apple")}


def _refuse_backend_for_gpu(backend: str | None, targets) -> None:
    """--backend naming a build that cannot drive a GPU given (`--backend rocm --gpu 'rtx 4090'`): a one-line error
    naming the GPU and the backends that can, not a plan on the other vendor's rules. A GPU not in the catalog
    (--vram alone) has no known vendor and is left alone."""
    from .hardware.catalog import find_device

    if backend not in BACKEND_VENDORS:
        return
    for target in (t for t in targets if t.kind != "cpu"):
        try:
            vendor = find_device(target.name.split(" #")[0]).vendor
        except ValueError:
            continue
        if vendor not in BACKEND_VENDORS[backend] and vendor in {v for vs in BACKEND_VENDORS.values() for v in vs}:
            can = [b for b, vendors in BACKEND_VENDORS.items() if vendor in vendors] + ["cpu"]
            builds_run = " / ".join(v.capitalize() if v != "amd" else "AMD" for v in BACKEND_VENDORS[backend])
            raise InputError(f"backend: --backend {backend} cannot drive the {target.name.split(' #')[0]} (a {backend} "
                             f"build runs {builds_run} GPUs); backends that can: {', '.join(can)}")


def _unsloth_note(quant: str | None, spec) -> list[str]:
    """`-q UD-Q4_K_XL`: say on the answer itself which sizes were planned (weights.unsloth_quant, quant/unsloth.py)."""
    from .quant.unsloth import from_its_file, unsloth_name
    from .weights import unsloth_substitute

    named = unsloth_name(quant)
    if named is None:
        return []
    if from_its_file(spec, named[0]):
        return [f"{named[0]}: Unsloth's dynamic quant, planned from the file's own tensor types"]
    return [unsloth_substitute(spec, quant, named[0]) or ""]


def _short_gguf(spec) -> list[str]:
    """A local GGUF smaller than the tensors its header lists: planned from the header, and said (a header-only
    file, or a download cut short that llama.cpp would refuse to load)."""
    from pathlib import Path

    source = str(spec.source)
    if not source.lower().endswith(".gguf") or spec.file_bytes is None:
        return []
    try:
        from .model.gguf import split_siblings
        from .units import format_bytes

        have = sum(part.stat().st_size for part in split_siblings(Path(source)))
    except (OSError, ValueError):
        return []
    if have >= spec.file_bytes:
        return []
    return [f"{Path(source).name}: the file holds {format_bytes(have)} of the {format_bytes(spec.file_bytes)} of "
            "tensors its header lists — an incomplete download? (planned from the header; llama.cpp would not "
            "load it)"]


def refuse_pairing(runtime: str, gpu: str | None, targets) -> None:
    """check's refusals of an engine on a device it has no backend for (MLX off Apple silicon, vLLM / SGLang on it),
    the one place every entry point that plans a named device asks: check's _inputs, compare's rows and cost, each
    before settled_plan (which does not ask again)."""
    _refuse_mlx_off_apple(runtime, gpu)
    _refuse_device(runtime, targets)


def _refuse_device(runtime: str, targets) -> None:
    """An engine with no backend for the GPU asked (vLLM and SGLang on Apple silicon) is refused before planning,
    as `best` leaves such pairs out (choose.runtime_runs_on): planning it would price a CUDA card that is not there."""
    from .runtimes import engine

    why = engine(runtime).not_on_apple
    if not why:
        return
    named = [t.name for t in targets if t.kind == "unified" and t.name.startswith("Apple")]
    if named:
        raise InputError(f"runtime: {why} — not planned on {named[0]}; --runtime mlx or llama.cpp run on its GPU")


def _refuse_more_ranks_than_gpus(req: CheckRequest, settings, targets) -> None:
    """--tp × --pp (× --dp) ranks need as many GPUs: one GPU holds one rank (vLLM's placement group asks for one
    GPU per rank and waits for GPUs that are not there; torch.distributed needs one device per rank)."""
    from .runtimes import get_runtime

    gpus = [t for t in targets if t.kind != "cpu"]
    ranks = max(1, settings.tp) * max(1, settings.pp) * max(1, req.dp)
    if not get_runtime(runtime_name(req)).pools_kv or not gpus or ranks <= len(gpus):
        return
    layout = " × ".join(f"--{k} {v}" for k, v in (("tp", settings.tp), ("pp", settings.pp), ("dp", req.dp)) if v > 1)
    raise InputError(f"tp: {layout} needs {ranks} GPUs, one per rank; {len(gpus)} given (--gpu {ranks}xNAME or "
                     f"--vram {ranks}xSIZE, or fewer ranks)")


def _default_tp(req: CheckRequest, spec, settings, targets, notes: list[str]):
    """`--gpu 8xh200` for vLLM or SGLang means all eight: one tensor-parallel rank per GPU (over pp stages) — or the
    largest size up to that whose attention heads split evenly, which the engine would accept (tensor_parallel.py)."""
    from .runtimes import get_runtime

    gpus = [t for t in targets if t.kind != "cpu"]
    runtime = get_runtime(runtime_name(req))
    if req.tp is not None or len(gpus) < 2 or not runtime.pools_kv:
        return settings
    from .runtimes import engine
    from .runtimes.base import GPUS_PER_NODE

    if (engine(runtime.name).multi_node and req.pp == 1 and len(gpus) > GPUS_PER_NODE
            and len(gpus) % GPUS_PER_NODE == 0):
        # vLLM's multi-node layout (docs, "Distributed inference and serving"): tensor parallel over the GPUs of a
        # node, pipeline parallel over the nodes, so that only the pipeline's activations cross the network
        pp = len(gpus) // GPUS_PER_NODE
        notes.append(f"tensor parallel {GPUS_PER_NODE} within each node × pipeline parallel {pp} across {pp} nodes "
                     "(vLLM's multi-node layout; set --tp/--pp)")
        return settings.with_(tp=GPUS_PER_NODE, pp=pp)
    from .runtimes.tensor_parallel import largest_tp, unsplit_heads

    ranks = max(1, len(gpus) // (max(1, req.pp) * max(1, req.dp)))
    tp = largest_tp(spec, ranks)
    dp = f" over {req.dp} data-parallel replicas" if req.dp > 1 else ""
    if tp == ranks:
        notes.append(f"tensor parallel {tp}: one rank per GPU given{dp} (set --tp)")
    else:
        why = unsplit_heads(spec, ranks)
        assert why is not None                  # largest_tp chose fewer ranks
        spread = f"; --tp 1 --pp {ranks} puts layers on all of them" if req.pp == 1 and req.dp == 1 else ""
        notes.append(f"tensor parallel {tp}, not {ranks}: vLLM and SGLang refuse {ranks} (\"{why[0]}\"), so "
                     f"{ranks - tp} of the {ranks} GPUs {'stays' if ranks - tp == 1 else 'stay'} idle{dp} (set --tp{spread})")
    return settings.with_(tp=tp)


def curve(req: CheckRequest, contexts: list[int] | None = None, policy=None) -> dict:
    """Memory against context, per device, from the plan `check` answers (plan.context_curves: the chart the site
    draws, from the same function): ``device`` / ``capacity`` / ``points`` are the first GPU's line, ``devices``
    every device's, ``max_context`` the answer's largest context, up to which every device stays under its limit,
    ``drawn`` what each point plans (plan.curve_words: the site's caption)."""
    from .plan import context_curves, curve_contexts, curve_words

    plan, _ = check(replace(req, use_measurements=False), policy)
    req = _pull_name(req)[0]
    targets = list(plan.searched_on) or _inputs(req, policy)[2]      # (none recorded: a plan refused unplanned)
    devices = context_curves(plan, targets, contexts or curve_contexts(plan))
    first = next((d for d in devices if d["kind"] != "cpu"), devices[0])
    return {"device": first["device"], "capacity": first["capacity"], "points": first["points"],
            "max_context": plan.max_context, "devices": devices, "drawn": curve_words(plan)}
