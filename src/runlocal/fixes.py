"""Changes that make a plan better, each re-planned with the change applied and kept only if it improves
the verdict or the limit it targets, ranked by what the user gives up.

Only the levers the plan's runtime has are tried (runtimes.base.Levers): a GGUF quant or -ngl for
llama.cpp and Ollama, gpu_memory_utilization for vLLM but mem_fraction_static for SGLang,
bitsandbytes for transformers, mlx_lm.convert -q for MLX. Cost: 0 = nothing (flash attention on where the plan has
it off), 1 = less context or concurrency, 2 = some quality (quantized KV or weights) or headroom, 3 = speed (layers on
the CPU), 4 = hardware.

Each fix's effect reads "before → after" on what it changes (the context, the KV pool's tokens, the
weights, the GPU layers), then the verdict and, where layers move, the decode speed before → after. The re-planning
and judging of a candidate is fixes_replan._Fixer's; this module holds the levers.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from .boundary import largest_guided
from .errors import InputError
from .fixes_replan import RANK, Fix, _Fixer, _layers_total
from .fixes_unoffered import combined_layers_tried, combined_unoffered
from .runtimes import Allocation, Settings, Target, engine
from .runtimes.base import GPUS_PER_NODE, PARALLEL_AUTO, largest
from .runtimes.llamacpp_layout import FIT_MARGIN
from .runtimes.published import POOLED_RUNTIMES, published_checkpoint, published_checkpoints
from .search import fits_verdict, longest_context, plan_fits
from .units import format_bytes
from .verdict import fits as _fits
from .verdict import verdict as _verdict
from .verdict import weights_in_ram
from .weights import estimate, is_gguf_quant

if TYPE_CHECKING:
    from .plan import Plan
    from .quant.formats import WeightEstimate


def _smaller_quants(ladder: tuple[str, ...], current: str) -> tuple[str, ...]:
    key = current.upper()
    upper = tuple(q.upper() for q in ladder)
    return ladder[upper.index(key) + 1:] if key in upper else ladder


def _quant_title(q: str) -> str:
    article = "an" if q[:1].upper() in "AEFHILMNORSX" else "a"     # as the letter is said: an IQ4_XS, a Q4_K_M
    return f"Use {article} {q} GGUF" if is_gguf_quant(q) else f"Quantize the weights to {q}"


def _gpu_layers(s: Settings, model) -> int:
    total = _layers_total(model)
    return total if s.llamacpp.n_gpu_layers is None or s.llamacpp.n_gpu_layers < 0 else min(s.llamacpp.n_gpu_layers, total)


def suggest_fixes(plan: Plan, targets: list[Target], asked: Settings | None = None) -> list[Fix]:
    """Each lever of the plan's runtime, re-planned with the planner that made the plan; those that improve it.
    ``asked``: the settings as the user gave them (before the runtime's defaults and compromise)."""
    f = _Fixer(plan, targets, asked)
    start = _start_fraction(f)
    if start is not None:
        # vLLM refused at start-up on a unified device (runtimes/vllm_unified.py): the fraction that starts is fix 1,
        # and every other lever is planned at it, its command carrying the flag (review22b finding 2)
        _budget(f)
        f.start_share, first, old = start, len(f.tried), f.base.vllm.gpu_memory_utilization
        f.base = f.base.with_(gpu_memory_utilization=start)
    _served_context_cap(f, asked)
    _flash_attention(f)
    _context_and_concurrency(f)
    _all_layers_on_gpu(f)
    _no_mmproj(f)
    _kv_and_weights(f)
    _published_checkpoints(f)
    _budget_and_layers(f)
    _cpu_kv_space(f)
    _host_swap(f)
    _unified_share(f)
    _more_gpus(f)
    if not any(t.cost <= 3 and f.improves(t) for t in f.tried) and not combined_unoffered(f):
        _combined(f)
    if start is not None:
        _with_start_fraction(f, first, old, start)
    return f.fixes()


def _served_context_cap(f: _Fixer, asked: Settings | None) -> None:
    """A release that serves no longer context than a cap whatever --max-model-len asks (vLLM 0.9.1: the tokenizer's
    model_max_length, runtimes/context_limit.vllm_tokenizer_cap, vllm/config.py get_and_verify_max_len, PR #20322).
    The plan's settings already carry the capped context, so every lever re-planned from them lost the compromise
    only by keeping the cut context, its command silently asking for the cap (review23 finding 1). The levers are
    judged at the context asked instead (the cap still holds there: a lever is kept only for what else it changes),
    and the one change that ends the compromise, asking for no more than is served, is offered first, saying why."""
    cap = getattr(f.runtime, "served_context_cap", lambda _: None)(f.model)
    # the context the runtime was asked for: the user's, else the model's own (vllm.VLLM.defaults' reading)
    wanted = (asked.ctx if asked is not None else None) or f.model.max_position_embeddings or 4096
    if not cap or cap >= wanted:
        return
    f.base = f.base.with_(ctx=wanted)
    version = getattr(f.runtime, "version", None)
    f.try_(f"Reduce context to {cap:,}", f.base.with_(ctx=cap),
           f"context {wanted:,} → {cap:,} tokens: {f'release {version}' if version else 'this release'} serves no "
           "longer whatever is asked (the cap said above), so the command asks for what runs", 1)


def _with_start_fraction(f: _Fixer, first: int, old: float | None, start: float) -> None:
    """The levers tried at the fraction that starts, each titled with both changes and costing at least the fraction
    alone (cost 2); kept only where it does better than the fraction alone (f.tried[:first], when that starts)."""
    alone = max((RANK[t.verdict] for t in f.tried[:first]), default=-1)
    combined = [replace(t, title=f"Lower gpu_memory_utilization to {start} and {t.title[:1].lower()}{t.title[1:]}",
                        change=f"gpu_memory_utilization {old} → {start} (the most that starts); {t.change}",
                        cost=max(t.cost, 2), levers=t.levers + 1) for t in f.tried[first:]]
    f.tried[first:] = [t for t in combined if RANK[t.verdict] > alone]


def _start_fraction(f: _Fixer) -> float | None:
    """The largest --gpu-memory-utilization that starts, where vLLM refuses the plan's at start-up (a unified NVIDIA
    device's free memory below that share of CUDA's total); None otherwise."""
    from .runtimes.vllm_unified import refused_at_start, starting_share

    return starting_share(f.runtime, f.targets) if refused_at_start(f.plan.allocation.refusal) else None


def _flash_off(f: _Fixer) -> bool:
    """The plan runs without flash attention where the engine could turn it on: a llama.cpp build before PR #15434
    (off unless -fa), or --flash-attn off / OLLAMA_FLASH_ATTENTION=0 asked for."""
    return _flash_switch(f) is not None and f.base.llamacpp.flash_attn == "off"


def _flash_switch(f: _Fixer) -> str | None:
    """How the plan's engine turns flash attention on (llama-server's flag as its build spells it, Ollama's
    OLLAMA_FLASH_ATTENTION=1); None for an engine without the switch."""
    switch = getattr(f.runtime, "flash_attention_switch", None)
    return (switch() or None) if switch is not None else None     # "": the build has no switch (before PR #5021)


def _overrides_tensors(f: _Fixer) -> bool:
    """Whether a named llama.cpp build takes -ot (PR #11397), which any placement of experts in RAM needs (another
    runtime's version, "0.6.0", is no bNNNN: not a llama.cpp build, so True)."""
    from .runtimes.flag_spelling import has_override_tensor, llamacpp_build

    return has_override_tensor(llamacpp_build(getattr(f.runtime, "version", None)))


def _flash_attention(f: _Fixer) -> None:
    """Flash attention on: the unfused attention's KQ scores (n_kv × n_ubatch × heads, f32) leave the compute buffer
    (llama.cpp src/llama-graph.cpp build_attn_mha: ggml_flash_attn_ext instead of ggml_mul_mat + ggml_soft_max_ext),
    and nothing is given up: cost 0, offered first (review17 finding 1)."""
    if not _flash_off(f) or f.flash_blocked:
        return
    switch = _flash_switch(f)
    new = f.base.with_(flash_attn="on")
    if not f.runs(new):
        # alone it does not start: the layer levers with it on, each titled with both changes (what flash attention
        # frees keeps more layers or experts on the GPU: gpt-oss-120b on b6089, 16.28 GiB of compute buffer)
        first, base = len(f.tried), f.base
        f.base = new
        _budget_and_layers(f)
        f.base = base
        for k in range(first, len(f.tried)):
            t = f.tried[k]
            f.tried[k] = replace(t, title=f"Turn on flash attention ({switch}) and {t.title[:1].lower()}{t.title[1:]}",
                                 change=f"flash attention off → on; {t.change}")
        return
    before, after = f.allocate(f.base), f.allocate(new)
    gpu = [i for i, d in enumerate(after.devices) if d.kind != "cpu"] or [0]
    i = max(gpu, key=lambda k: before.devices[k].compute if k < len(before.devices) else 0)
    change = "flash attention off → on"
    if i < len(before.devices) and before.devices[i].compute != after.devices[i].compute:
        change += (f": compute buffer {format_bytes(before.devices[i].compute)} → "
                   f"{format_bytes(after.devices[i].compute)} on {after.devices[i].name}")
    if before.refusal and "flash" in before.refusal.lower():
        change += f" (the runtime refuses the plan without it: {before.refusal})"
    f.try_(f"Turn on flash attention ({switch})", new, change, 0)


def _context_and_concurrency(f: _Fixer) -> None:
    _context_fixes(f)
    _concurrency_fixes(f)


def _context_fixes(f: _Fixer) -> None:
    """A longer context where --fit cut it (or a pooled engine's max), else a shorter one that fits."""
    s, model = f.base, f.model
    ctx = s.ctx or 0
    compromise = f.plan.allocation.compromise or ""
    if f.all_on_gpu and "context shortened" in compromise and f.plan.max_context:
        # --fit cut the context to fit: the plan's max context (every layer on the GPU, plan.max_context_basis) where
        # it is longer, and the longest -c that starts with --fit moving layers to system memory for it
        fresh, most = f.base.with_(n_gpu_layers=None, n_cpu_moe=0), f.plan.max_context
        on_gpu = f.plan.max_context_basis == "all_on_gpu"
        if most > ctx and on_gpu:
            f.try_(f"Ask for context {most:,} (-c {most})", fresh.with_(ctx=most),
                   f"context {ctx:,} → {most:,} tokens, every layer still on the GPU", 1, gains_context=True)
        longest = (longest_context(f.runtime, model, f.plan.weights, fresh, f.targets,
                                   hi=model.max_position_embeddings or 131072) if on_gpu else most)
        if longest and longest > (max(ctx, most) if on_gpu else ctx):
            f.try_(f"Ask for context {longest:,} (-c {longest})", fresh.with_(ctx=longest),
                   f"context {ctx:,} → {longest:,} tokens, --fit moving layers to system memory", 3,
                   gains_context=True)
        # a pooled engine: the plan's max context is already the longest max_model_len it starts with
        if f.plan.max_context and f.plan.max_context < ctx:
            f.try_(f"Reduce context to {f.plan.max_context:,}", s.with_(ctx=f.plan.max_context),
                   f"context {ctx:,} → {f.plan.max_context:,} tokens", 1)
    elif ctx > 1:
        # the longest context that fits with room to spare (under 90 %), else the longest that starts at all;
        # past the trained context, no longer than it (beyond it is a quality question the plan warns of)
        trained = model.max_position_embeddings
        hi = min(ctx - 1, trained) if trained and ctx > trained else ctx - 1
        # the plan's max context (the largest that starts, searched finer) where it is below the context asked
        # (not the all-on-GPU reading: it holds --fit's margin, which -ngl pinned in the fix's command need not)
        top = (f.plan.max_context if f.plan.max_context and f.plan.max_context <= hi
               and f.plan.max_context_basis != "all_on_gpu" else None)
        top_alloc = f.allocate(s.with_(ctx=top)) if top and f.runs(s.with_(ctx=top)) else None
        roomy = (top if top_alloc is not None and fits_verdict(top_alloc, model)
                 else longest_context(f.runtime, model, f.plan.weights, s, f.targets, hi=hi, ok=fits_verdict))
        shorter = roomy or (top if top_alloc is not None
                            else longest_context(f.runtime, model, f.plan.weights, s, f.targets, hi=hi))
        # the plan's max context is the largest that starts; this one keeps every device under 90 % (review17 §15)
        basis = f.plan.max_context_basis
        reading = " with every layer on the GPU" if basis == "all_on_gpu" else ""
        why = (f", the longest under the 90 % rule ({f.plan.max_context:,}, the max context{reading}, starts but "
               "leaves less room)" if roomy and f.plan.max_context and f.plan.max_context > roomy
               and basis != "layers_in_ram" else "")
        if shorter:
            f.try_(f"Reduce context to {shorter:,}", s.with_(ctx=shorter),
                   f"context {ctx:,} → {shorter:,} tokens{why}", 1)


def _concurrency_fixes(f: _Fixer) -> None:
    """Fewer parallel sequences: a stated --parallel lowered, vLLM Mllama's --max-num-seqs, llama-server's auto slots."""
    s = f.base
    if s.parallel > 1:
        n = largest_guided(1, s.parallel - 1, lambda k: f.runs_room(s.with_(parallel=k)))
        if n:
            f.try_(f"Serve {n} parallel request{'s' if n > 1 else ''} instead of {s.parallel}", s.with_(parallel=n),
                   f"parallel {s.parallel} → {n}", 1)
    elif seqs := getattr(f.runtime, "profiled_num_seqs", lambda *_: None)(f.model, s):
        # vLLM V0 runs Mllama's vision encoder on max_num_seqs dummy images at start-up (runtimes/vllm_mllama.py);
        # --max-num-seqs 1 is planned as one sequence (registry.Engine.auto_parallel keeps "not given" apart)
        n = largest_guided(1, seqs - 1, lambda k: f.runs_room(s.with_(parallel=k))) if seqs > 1 else None
        if n:
            first = len(f.tried)
            f.try_(f"Lower --max-num-seqs to {n}", s.with_(parallel=n),
                   f"max_num_seqs {seqs} → {n}: the start-up profile encodes {n} dummy images, not {seqs}; {n} is the "
                   "most its vision term allows, and that term is a lower bound (hidden states, the activation's "
                   "output and the attention's buffers are not counted), so fewer may be needed: vllm#9445 started an "
                   "A100 80 GB at 32", 1)
            # the largest n a lower bound allows is the least safe value: said tight, never fits (review23 finding 3)
            f.tried[first:] = [replace(t, verdict="tight") if t.verdict == "fits" else t for t in f.tried[first:]]
    elif s.parallel == PARALLEL_AUTO and engine(f.plan.runtime).ggml:     # llama-server's auto (vLLM/SGLang: theirs)
        # llama-server's default 4 slots share one cache of -c cells: one slot keeps the context and drops the
        # other slots' sliding windows, logits and graph rows (runtimes/llamacpp.py slots)
        from .runtimes.llamacpp import AUTO_SLOTS

        new = s.with_(parallel=1)
        if f.runs(new):
            # "before" is the plan as it stands (after --fit moved what it moved), not a re-plan of it
            before, after = f.plan.allocation, f.allocate(new)
            gpu = [i for i, d in enumerate(after.devices) if d.kind != "cpu"] or [0]
            i = max(gpu, key=lambda k: before.devices[k].total if k < len(before.devices) else 0)
            pinned = f.allocate(s) if f.all_on_gpu else before
            # where one slot frees nothing on the GPU the plan with every layer there does not already free, the
            # gain is the pinned layers (_all_layers_on_gpu offers that), not the slots
            frees = i < len(pinned.devices) and after.devices[i].total < pinned.devices[i].total
            if i < len(before.devices) and frees:
                f.try_("Serve one request at a time (--parallel 1)", new,
                       f"parallel auto ({AUTO_SLOTS} slots) → 1: {before.devices[i].name} "
                       f"{format_bytes(before.devices[i].total)} → {format_bytes(after.devices[i].total)}"
                       + _layers_moved(f, before, after), 1)


def _layers_moved(f: _Fixer, before: Allocation, after: Allocation, asked: bool = False) -> str:
    """", GPU layers 29 → 33 of 33" where the fix also puts back on the GPU what --fit (or, ``asked``, the user's own
    flags) held in system memory."""
    if not (f.all_on_gpu or asked):
        return ""
    total = _layers_total(f.model)
    was = _gpu_layers(before.settings, f.model)
    now = _gpu_layers(after.settings, f.model)
    moe_was, moe_now = before.settings.llamacpp.n_cpu_moe or 0, after.settings.llamacpp.n_cpu_moe or 0
    if moe_was != moe_now:
        return f", experts in system memory {moe_was} → {moe_now} of {f.model.n_layers} layers"
    return f", GPU layers {was} → {now} of {total}" if was != now else ""


def _all_layers_on_gpu(f: _Fixer) -> None:
    """llama-server --fit moved layers or experts to system memory to keep its margin free (FIT_MARGIN a device,
    common/fit.cpp), yet every layer fits on the GPU: -ngl all / --n-cpu-moe 0 pins them
    there (--fit changes only what the command leaves unset), the fix says what it then leaves free. The same where
    the user's own -ngl / --n-cpu-moe / -ot held them in RAM (tight whoever placed them, verdict.weights_in_ram)."""
    asked = (not f.all_on_gpu and f.has_gpu and engine(f.runtime.name).ggml
             and weights_in_ram(f.plan.allocation, f.model))
    if not (f.all_on_gpu or asked):
        return
    pinned = (f.base.with_(n_gpu_layers=_layers_total(f.model), n_cpu_moe=0,
                           override_tensor=tuple(r for r in f.base.llamacpp.override_tensor if r[1] != "CPU"))
              if asked else f.base)
    if not f.runs(pinned):
        return
    before, after = f.plan.allocation, f.allocate(pinned)
    moved = (_gpu_layers(before.settings, f.model) < _layers_total(f.model)
             or bool(before.settings.llamacpp.n_cpu_moe))
    i = next((k for k, d in enumerate(after.devices) if d.kind != "cpu"), 0)
    if not (moved or asked) or i >= len(before.devices):
        return          # --fit only shortened the context: no layer to put back (the context fixes say that)
    f.try_(f"Keep every layer on the GPU (-ngl {_layers_total(f.model)})", pinned,
           f"{before.devices[i].name} {format_bytes(before.devices[i].total)} → "
           f"{format_bytes(after.devices[i].total)}" + _layers_moved(f, before, after, asked)
           + f", {format_bytes(after.devices[i].capacity - after.devices[i].total)} left free (--fit aims to leave "
           f"{format_bytes(FIT_MARGIN)})", 2)


def _no_mmproj(f: _Fixer) -> None:
    """llama-server -hf loads a vision model's projector after --fit placed the layers, on the first GPU
    (runtimes/llamacpp_mmproj.py): --no-mmproj serves text only without it. The plan as placed (--fit ignores the
    projector, so its choice stands) less the projector; kept where that improves the verdict."""
    step = next((st for st in f.plan.allocation.steps if st.label.startswith("multimodal projector (-hf)")), None)
    if step is None or not f.plan.settings.llamacpp.mmproj:
        return
    f.try_("Serve text only (--no-mmproj)", f.plan.settings.with_(mmproj=False),
           f"the repo's multimodal projector ({format_bytes(int(step.value.split()[0].replace(',', '')))}) not "
           "loaded: no image or audio input", 1)


def _kv_words(alloc: Allocation) -> str:
    if alloc.kv_cache_tokens is not None:
        return f"{alloc.kv_cache_tokens:,} tokens"
    return format_bytes(sum(d.kv_cache for d in alloc.devices))


def _kv_and_weights(f: _Fixer) -> None:
    s = f.base
    for kv in f.levers.kv_cache_types:
        if s.cache_type_k == kv or f.flash_blocked:
            continue
        flash = s.llamacpp.flash_attn
        new = s.with_(cache_type_k=kv, cache_type_v=kv, flash_attn="on" if flash == "off" else flash)
        if f.runs(new):
            # a quantized V cache needs flash attention (llama.cpp src/llama-context.cpp): where the plan has it off,
            # "before" is the plan with it on, so the KV cache's own gain is said, not flash attention's (its own fix)
            paired = _flash_off(f)
            before, after = f.allocate(s.with_(flash_attn="on") if paired else s), f.allocate(new)
            # a pooled engine's KV pool keeps its bytes (the memory budget sets it): what changes is its tokens
            what = "KV pool" if after.kv_cache_tokens is not None else "KV cache"
            pairing = (f", with flash attention on ({_flash_switch(f)}), which a quantized V cache needs"
                       if paired else "")
            f.try_(f"Quantize the KV cache to {kv}" + pairing, new, f"{what} {_kv_words(before)} → {_kv_words(after)}"
                   + (" (half the bytes per token: twice the tokens)" if what == "KV pool" else ""), 2)
            break
    for q in _smaller_quants(f.levers.weight_quants, f.plan.weights.quant):
        try:
            w = estimate(f.model, q)
            if (w.total >= f.weights_held or not f.runs(s.with_(quant=q), q)
                    or f.runtime.pools_kv and published_checkpoint(f.model, q)):   # the published one is offered
                continue
        except InputError:          # a format this model cannot take (e.g. a row size the blocks do not divide)
            continue
        f.try_(_quant_title(q), s.with_(quant=q),
               f"weights {format_bytes(f.weights_held)} → {format_bytes(w.total)}", 2, quant=q)
        break


def _published_checkpoints(f: _Fixer) -> None:
    """vLLM / SGLang: the model's published quantized checkpoints (data/published_checkpoints.json), served as stored.
    A format refused for the GPU (FP8 on a V100), or by transformers (AutoFP8's scales unread): the catalog's checkpoint
    as stored (its 16-bit repo); under vLLM / SGLang another format too."""
    pooled, refusal = f.runtime.name in POOLED_RUNTIMES, f.plan.allocation.refusal or ""
    stored, kernel = (f.model.file_quant or "bf16").lower(), pooled and "compute capability" in refusal
    # AutoFP8 under transformers computes with unscaled weights (runtimes/transformers.py AUTOFP8_UNREAD): the bf16
    # repo it was made from gives up nothing that ran (cost 0); a directly loaded FP8 repo names no base (not offered)
    unread = not pooled and "AutoFP8" in refusal and stored in ("bf16", "fp16", "f16", "fp32", "f32")
    if (kernel or unread) and f.plan.weights.quant != stored:
        title = f"{'Serve' if pooled else 'Load'} the checkpoint as stored ({stored}) {f.model.repo_id or f.model.id}"
        change = f"weights {format_bytes(f.weights_held)} → {format_bytes(estimate(f.model, stored).total)}"
        if f.runs(f.base.with_(quant=stored), stored) or pooled:
            f.try_(title, f.base.with_(quant=stored), change, 2 if pooled else 0, quant=stored)
        else:                       # bf16 where the FP8 bytes fitted: with a shorter context
            _with_second_lever(f, title, f.base.with_(quant=stored), change, stored)
    for entry in published_checkpoints(f.model) if pooled else ():
        w = estimate(f.model, entry["format"])
        if w.total < f.plan.weights.total or kernel and entry["format"] != f.plan.weights.quant:
            title = f"Serve the published {entry['label']} checkpoint {entry['repo']}"
            change = f"weights {format_bytes(f.plan.weights.total)} → {format_bytes(w.total)}"
            new = f.base.with_(quant=entry["format"])
            if f.runs(new, entry["format"]):
                f.try_(title, new, change, 2, quant=entry["format"])
            else:
                _with_second_lever(f, title, new, change, entry["format"])


def _with_second_lever(f: _Fixer, title: str, s: Settings, change: str, quant: str | None = None) -> None:
    """One change that does not start alone (a published checkpoint, less swap space), paired with a second lever:
    the longest context that starts with it; an 8-bit KV cache (fp8 / q8_0: twice the tokens in the same bytes) at
    the context asked; where neither alone does, both. Both levers' effects are said (review16 finding 5)."""
    ctx = s.ctx or 0
    w = f.weights(quant)
    trained = f.model.max_position_embeddings
    hi = min(ctx - 1, trained) if trained and ctx > trained else ctx - 1
    shorter = longest_context(f.runtime, f.model, w, s, f.targets, hi=hi) if hi >= 1 else None
    if shorter and f.runs(f.base.with_(ctx=shorter)):
        shorter = None      # the change buys no context over the plan as it is (vLLM's CPU KV space: weights aside)
    if shorter:
        f.try_(f"{title}, with context {shorter:,}", s.with_(ctx=shorter),
               f"{change}; context {ctx:,} → {shorter:,} tokens", 2, quant=quant, levers=2)
    for kv in f.levers.kv_cache_types:
        if kv == s.cache_type_k or f.flash_blocked:
            continue
        flash = s.llamacpp.flash_attn
        kv_s = s.with_(cache_type_k=kv, cache_type_v=kv, flash_attn="on" if flash == "off" else flash)
        if f.runs(kv_s, quant):        # the context kept, the KV cache halved
            f.try_(f"{title}, with the KV cache in {kv}", kv_s, f"{change}; KV cache f16 → {kv}", 2, quant=quant,
                   levers=2)
            return
        if shorter:
            return
        shorter = longest_context(f.runtime, f.model, w, kv_s, f.targets, hi=hi) if hi >= 1 else None
        if shorter:
            f.try_(f"{title}, with the KV cache in {kv} and context {shorter:,}", kv_s.with_(ctx=shorter),
                   f"{change}; KV cache f16 → {kv}; context {ctx:,} → {shorter:,} tokens", 2, quant=quant, levers=3)
            return


BUDGET_STEP = 0.01       # --gpu-memory-utilization / --mem-fraction-static as the fix writes them: two decimals
BUDGET_PROBES = 30       # at most this many values tried each way (0.704 → 0.95 is 25 steps)


def _budget(f: _Fixer) -> None:
    """vLLM's / SGLang's memory fraction: the smallest value above the plan's own (vLLM's release default, SGLang's
    automatic one, or the user's) that runs (review19 finding 5: SGLang's refusal names 'above 0.782', and only 0.95,
    itself out of memory, was tried). Below it the KV pool is short; above it the activations' headroom shrinks, so
    the top can fail too: the search walks up from the plan's value, and where nothing above runs and the user set
    the value, down from it (the largest below that runs)."""
    from .runtimes.vllm_unified import refused_at_start

    s, name, top = f.base, f.levers.budget, f.levers.budget_max
    current = f.runtime.defaults(f.model, s, f.targets).option(name) if name else None
    if name is None or current is None:
        return
    base = round(current, 2)
    up = [round(base + BUDGET_STEP * i, 2) for i in range(1, BUDGET_PROBES + 1)]
    down = [round(base - BUDGET_STEP * i, 2) for i in range(1, BUDGET_PROBES + 1)] if s.option(name) else []
    for verb, values in (("Raise", [v for v in up if current < v <= top]),
                         ("Lower", [v for v in down if 0 < v < current])):
        new = next((n for v in values if f.runs(n := s.with_(**{name: v}))), None)
        if new is not None:
            value = new.option(name)
            before, after = f.allocate(s), f.allocate(new)
            # refused at start-up (a unified device's free memory below the share of its total: runtimes/vllm_unified.py),
            # the pool it would have had never exists: the change is that it starts
            pool = (f"it runs (at {current} the memory free is below what that share of the total needs), KV pool "
                    f"{_kv_words(after)}"
                    if refused_at_start(before.refusal) else
                    f"KV pool {_kv_words(before)} → {_kv_words(after)}, "
                    + ("less headroom for activations" if verb == "Raise" else "more headroom for activations"))
            f.try_(f"{verb} {name} to {value}", new, f"{name} {current} → {value}: {pool}", 2)
            return


def _budget_and_layers(f: _Fixer) -> None:
    s, levers, model = f.base, f.levers, f.model
    if levers.budget and f.start_share is None:     # else tried already, and the base is at it
        _budget(f)
    # a mixture of experts: its experts in RAM, the attention and shared weights on the GPU (llama-server
    # --n-cpu-moe N: the experts of the first N layers on the CPU), far faster than whole layers there
    if (levers.layer_offload and model.n_experts and engine(f.runtime.name).cpu_moe and not f.all_on_gpu
            and f.has_cpu and f.has_gpu and not s.llamacpp.n_cpu_moe and _overrides_tensors(f)):
        full = s.with_(n_gpu_layers=_layers_total(model))
        kept = largest_guided(0, model.n_layers - 1, lambda j: f.runs_room(full.with_(n_cpu_moe=model.n_layers - j)))
        if kept is not None:
            n = model.n_layers - kept
            f.try_(f"Keep the experts of {n} of {model.n_layers} layers in RAM (--n-cpu-moe {n})",
                   full.with_(n_cpu_moe=n), f"experts in RAM 0 → {n} of {model.n_layers} layers, the rest on the "
                   "GPU: each token reads only its routed experts from RAM", 3)
    # partial offload: keep some layers on the CPU (not where the runtime already did: that is the plan)
    if levers.layer_offload and not f.all_on_gpu and f.has_cpu and f.has_gpu:
        ngl = f.most_gpu_layers(s)
        current = _gpu_layers(s, model)
        if ngl is not None and ngl < current:
            f.try_(f"Keep {ngl} of {_layers_total(model)} layers on the GPU, the rest in RAM",
                   s.with_(n_gpu_layers=ngl, n_cpu_moe=0),
                   f"GPU layers {current} → {ngl} of {_layers_total(model)}: the others run at RAM bandwidth", 3)


def _cpu_kv_space(f: _Fixer) -> None:
    """vLLM's CPU backend: its KV cache is VLLM_CPU_KVCACHE_SPACE GiB, whatever RAM is free (vllm/platforms/cpu.py),
    and it refuses a max_model_len whose one request the space does not hold. The fewest whole GiB that hold it (vLLM
    reads the variable with int(), vllm/envs.py), where the RAM has them: the context kept, the weights as they are;
    what it takes is RAM that was free, so it costs nothing while the plan stays under 90 % (review17 finding 6)."""
    if f.has_gpu or "cpu_kvcache_space" not in engine(f.runtime.name).own_options:
        return
    s = f.base
    current = s.vllm.cpu_kvcache_space or 0
    ram = next((t for t in f.targets if t.kind == "cpu"), None)
    alloc = f.plan.allocation
    if ram is None or alloc.max_concurrency is None:
        return
    space = sum(d.kv_cache for d in alloc.devices)
    # unset, vLLM 0.13–0.19 take half the RAM whatever the weights (runtimes/vllm_cpu.py): over the RAM, the fix is
    # the fewest GiB that hold one request, set
    too_much = not current and alloc.max_concurrency >= 1 and _verdict(f.plan.allocation, f.model) != "fits"
    if alloc.max_concurrency >= 1 and not too_much:
        return
    top = int(ram.capacity // (1 << 30))

    def holds(n: int) -> bool:
        a = f.allocate(s.with_(cpu_kvcache_space=n))
        return a.max_concurrency is not None and a.max_concurrency >= 1

    lo = 1 if too_much else max(current, int(space // (1 << 30))) + 1
    if lo > top or not holds(top):
        return
    hi = top
    while lo < hi:                     # the fewest GiB whose blocks hold one request of the context
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid + 1, hi)
    new = s.with_(cpu_kvcache_space=lo)
    if f.runs(new):
        after = f.allocate(new)
        cost = 0 if _verdict(after, f.model) == "fits" else 2
        f.try_(f"{'Set' if too_much else 'Raise'} VLLM_CPU_KVCACHE_SPACE to {lo} GiB", new,
               f"CPU KV cache {format_bytes(space)} → {lo} GiB: KV pool {_kv_words(alloc)} → {_kv_words(after)}, "
               + ("the fewest whole GiB that hold one request, leaving the rest of the RAM to the weights"
                  if too_much else "from RAM that was free"), cost)


def _host_swap(f: _Fixer) -> None:
    """vLLM refuses to start when its CPU swap space × TP is above 70 % of the host's RAM, and its error says to lower
    --swap-space (vllm/config/cache.py verify_with_parallel_config): the largest whole GiB per GPU it accepts. Only
    for a release that has the flag and the check — up to v0.17.1 (PR #36216 removed both): the plan carries the
    "host swap space" step (runtimes/vllm_swap.py) then only, so the step, not the engine, decides."""
    name, s = "swap_space", f.base          # VLLMOptions.swap_space
    if not any(st.label == "host swap space" for st in f.plan.allocation.steps) or f.runs(s):
        return
    current = s.option(name)
    below = math.ceil(current) - 1
    gib = largest(0, below, lambda n: f.runs(s.with_(**{name: float(n)}))) if below >= 0 else None
    if gib is not None:
        f.try_(f"Lower the CPU swap space to {gib} GiB per GPU (--swap-space {gib})", s.with_(**{name: float(gib)}),
               f"swap space {current:g} → {gib} GiB per GPU: within vLLM's check of 70 % of the host's RAM", 1)
        return
    # the swap check and another one (the KV pool against max_model_len) both refuse: the most swap space that
    # passes its check at the shortest context, then the longest context with it. Only where the swap check is one
    # of them: at the shortest context the current swap space must be refused, else less swap changes nothing
    # (review17 finding 5: a CPU-only run, or 4 GiB × TP well under 70 % of RAM, got it beside every context fix)
    short = s.with_(ctx=min(s.ctx or 1, 256))
    if f.runs(short):
        return
    gib = largest(0, below, lambda n: f.runs(short.with_(**{name: float(n)}))) if below >= 0 else None
    if gib is not None:
        _with_second_lever(f, f"Lower the CPU swap space to {gib} GiB per GPU (--swap-space {gib})",
                           s.with_(**{name: float(gib)}), f"swap space {current:g} → {gib} GiB per GPU: within "
                           "vLLM's check of 70 % of the host's RAM")


def _unified_share(f: _Fixer) -> None:
    """An AMD APU (Strix Halo) planned at Linux's default GPU share, half its RAM: the same plan with the share raised
    through the ttm module's pages_limit (hardware/unified_memory.py: the kernel parameter, its unit, RAM − 8 GiB).
    Every layer back on the GPU (f.base), the host keeping the rest of the RAM."""
    from .hardware.catalog import load_devices
    from .hardware.unified_memory import TTM_PAGE_BYTES, raised_gpu_share

    devices = {d.name: d for d in load_devices()}
    for i, t in enumerate(f.targets):
        device = devices.get(t.name) if t.kind == "unified" else None
        if device is not None and _wired_limit(f, i, device):
            continue
        raised = raised_gpu_share(device, t.capacity) if device is not None else None
        if device is None or raised is None:
            continue
        pages = raised // TTM_PAGE_BYTES
        more = [*f.targets[:i], replace(t, capacity=raised), *f.targets[i + 1:]]
        setting = f"echo 'options ttm pages_limit={pages}' | sudo tee /etc/modprobe.d/ttm.conf"
        f.try_(f"Raise the GPU's share of RAM to {format_bytes(raised)} (Linux: ttm pages_limit)", f.base,
               f"GPU share {format_bytes(t.capacity)} → {format_bytes(raised)} of {format_bytes(device.memory_bytes)}, "
               f"{format_bytes(device.memory_bytes - raised)} left to the OS (AMD's guide: raise the TTM limit, keep "
               "the BIOS VRAM carve-out small; Windows: Variable Graphics Memory)",
               2, targets=more, command=f"{setting}   # reboot, then: {f.runtime.command(f.model, f.base)}")


def _wired_limit(f: _Fixer, i: int, device) -> bool:
    """A Mac at macOS's default GPU working set: the smallest iogpu.wired_limit_mb, in whole GiB up to RAM − OS_FLOOR,
    with which the plan runs (review19 finding 11; the AMD APU's ttm pages_limit below is the same fix on Linux).
    True where the device is such a Mac (offered or not), so the AMD branch is not tried."""
    from .hardware.unified_memory import OS_FLOOR, raised_wired_limits

    t = f.targets[i]
    limits = raised_wired_limits(device, t.capacity)
    if not limits:
        return device.vendor == "apple"
    # the aim: a plan that does not start starts; a tight one gets under the 90 % rule
    aim = partial(fits_verdict, model=f.model) if f.runs(f.base) else _fits
    more = next((m for n in limits
                 if aim(f.allocate(f.base, None, m := [*f.targets[:i], replace(t, capacity=n), *f.targets[i + 1:]]))),
                None)
    if more is not None:
        n = more[i].capacity
        f.try_(f"Raise the GPU's working set to {format_bytes(n)} (sudo sysctl iogpu.wired_limit_mb={n >> 20})",
               f.base, f"GPU working set {format_bytes(t.capacity)} → {format_bytes(n)} of "
               f"{format_bytes(device.memory_bytes)}, {format_bytes(device.memory_bytes - n)} left to macOS and other "
               f"programs (at least {format_bytes(OS_FLOOR)} kept); reset at reboot", 2, targets=more,
               command=f"sudo sysctl iogpu.wired_limit_mb={n >> 20} && {f.runtime.command(f.model, f.base)}")
    return True


def _more_gpus(f: _Fixer) -> None:
    """The same GPU, more of them: tensor parallel on a pooled engine (vLLM spans nodes with TP 8 × PP 2),
    layers split by memory in llama.cpp. Not for unified-memory chips (one GPU per machine)."""
    gpus = [t for t in f.targets if t.kind != "cpu"]
    if not gpus or len({t.name for t in gpus}) != 1 or not engine(f.runtime.name).more_gpus:
        return
    if any(t.kind == "unified" for t in gpus):
        # a Mac or a Jetson is one chip: a second one is a second computer, reachable only over llama.cpp's RPC
        # backend (tools/rpc/README.md: `rpc-server -H 0.0.0.0 -p 50052` there, `--rpc HOST:50052` here), whose network
        # transfers this planner does not price; the same command on one machine would add nothing
        return
    s, gpu, cpu = f.base, gpus[0], [t for t in f.targets if t.kind == "cpu"]
    have = len(gpus)
    for n in (2, 4, 8, 16):
        if n <= have or (n > GPUS_PER_NODE and not engine(f.runtime.name).multi_node):
            continue
        new = s
        if f.levers.tensor_parallel:
            from .runtimes.tensor_parallel import unsplit_heads

            if unsplit_heads(f.model, min(n, GPUS_PER_NODE)):
                continue        # the engine refuses a TP that does not split the heads (tensor_parallel.py)
            new = s.with_(tp=min(n, GPUS_PER_NODE), pp=max(1, n // GPUS_PER_NODE))
        more = [gpu] * n + cpu
        before = len(f.tried)
        nodes = (f", {n // GPUS_PER_NODE} nodes: TP {GPUS_PER_NODE} × PP {n // GPUS_PER_NODE}"
                 if n > GPUS_PER_NODE else "")
        f.try_(f"Use {n} GPUs ({n} × {gpu.name}{nodes})", new, "", 4, targets=more)
        if len(f.tried) > before:
            t = f.tried[-1]
            f.tried[-1] = replace(t, change=f"GPUs {have} → {n}" + (f": KV pool {_kv_words(t.alloc)}"
                                                                    if t.alloc.kv_cache_tokens else ""))
            return


def _fit_placed(f: _Fixer) -> Settings | None:
    """The plan's settings with the layers left to llama-server --fit, as the max-context search re-places them at
    each context (plan.searched); None where the fixes already plan that way (the runtime placed nothing)."""
    searched = f.plan.searched
    if not f.all_on_gpu or searched is None or searched.llamacpp.n_gpu_layers is not None:
        return None
    return searched


def _shorter_with(f: _Fixer, w: WeightEstimate, s: Settings, lo: int, hi: int, granule: int) -> int | None:
    """The longest context in [lo, hi] at which ``s`` starts, for a fix that pairs it with another lever: the range's
    top first, where it starts the answer (the fix's plan, made anyway; no context nearer the one asked); else the
    max-context search from its fixed points (longest_context). Only the top is new: a fix's range ends below the
    context asked, so its figure moves with -c whatever the search, and where the top starts the search's first
    plans (PIVOT_CTX's whole --fit over several GPUs, some twenty graph simulations) would only confirm it."""
    top = max(1, hi // granule) * granule
    if top >= lo and plan_fits(f.runtime, f.model, w, s.with_(ctx=top), f.targets):
        return top
    return longest_context(f.runtime, f.model, w, s, f.targets, lo=lo, hi=hi, granule=granule)


def _combined(f: _Fixer) -> None:
    """Nothing above alone: a smaller quant together with a shorter context, or with CPU layers."""
    s, model = f.base, f.model
    granule, floor = 256, 2048
    found = 0
    for q in _smaller_quants(f.levers.weight_quants, f.plan.weights.quant):
        try:
            w = estimate(model, q)
        except InputError:
            continue
        if w.total >= f.weights_held:
            continue
        change = f"weights {format_bytes(f.weights_held)} → {format_bytes(w.total)}"
        if s.ctx and s.ctx > floor:
            # every layer on the GPU (f.base) first; where llama-server --fit placed the layers (f.all_on_gpu), also
            # as it would place them at the shorter context, layers in system memory allowed: a 70B Q3_K_M at -c
            # 8192 on an 8 GB card with 32 GiB of RAM starts, where neither lever alone does (review18 finding 2)
            for base, placed in ((s, ""), (_fit_placed(f), ", --fit placing the layers")):
                if base is None:
                    continue
                ctx = _shorter_with(f, w, base.with_(quant=q), floor, s.ctx - granule, granule)
                if ctx:
                    f.try_(f"{_quant_title(q)} and reduce context to {ctx:,}", base.with_(quant=q, ctx=ctx),
                           f"{change}, context {s.ctx:,} → {ctx:,} tokens{placed}", 3, quant=q, levers=2)
                    found += 1
                    break
        current = _gpu_layers(f.plan.settings, model)
        if combined_layers_tried(f):
            ngl = f.most_gpu_layers(s.with_(quant=q), q, above=current if f.all_on_gpu else None)
            if ngl and (not f.all_on_gpu or ngl > current):
                f.try_(f"{_quant_title(q)} with {ngl} of {_layers_total(model)} layers on the GPU",
                       s.with_(quant=q, n_gpu_layers=ngl, n_cpu_moe=0),
                       f"{change}, GPU layers {current} → {ngl} of {_layers_total(model)}", 3, quant=q)
                found += 1
        if found >= 2:
            break


__all__ = ["Fix", "suggest_fixes"]
