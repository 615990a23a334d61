"""ModelSpec + targets + Settings → Plan: the breakdown, the verdict, the limits that fit, the fixes.

Pure computation: no I/O. Every renderer (text, JSON, HTML) takes the one Plan this returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .boundary import largest_guided
from .errors import InputError
from .fixes import Fix, suggest_fixes
from .memo import per_model
from .model.spec import ModelSpec
from .quant.formats import WeightEstimate
from .runtimes import Allocation, Runtime, Settings, Step, Target, engine, get_runtime, runtime_rules
from .runtimes.base import PARALLEL_AUTO
from .runtimes.llamacpp_layout import AUTO_SLOTS
from .search import POOL_GRANULE, context_search_step, fits_room, keeps_every_layer, longest_context, starts_one_request
from .units import format_bytes
from .verdict import DEFAULT_RAM_BANDWIDTH_GBS, TIGHT_SHARE, fits, rejects_long_requests, speed, verdict, weights_held
from .weight_mix import type_mix_step
from .weights import (
    GGUF_DEFAULT_QUANT,
    estimate,
    is_gguf_quant,
    unsloth_command,
    unsloth_fetched,
    unsloth_substitute,
    with_default_quant,
)


@dataclass(frozen=True)
class Plan:
    model: ModelSpec
    runtime: str
    weights: WeightEstimate
    allocation: Allocation
    verdict: str
    max_context: int | None
    max_concurrency: float | None
    command: str
    fixes: tuple[Fix, ...] = ()
    steps: tuple[Step, ...] = ()
    speed: dict[str, float | None] = field(default_factory=lambda: {"decode_tokens_per_s": None,
                                                                    "prefill_tokens_per_s": None})
    measured: dict[str, Any] | None = None      # stored measurements that replaced predictions (measured.py)
    # the runtime planner that made it (with the server environment it was given): the fixes re-plan with it
    planner: Any = field(default=None, repr=False, compare=False)
    conditions: tuple[str, ...] = ()            # what the verdict depends on that nobody stated ("fits if RAM ≥ …")
    # what max_context was searched at (the settings, with --fit placing the layers again at each context where it
    # moved some, and the targets): context_curves draws the plan at each context from the same, so the chart's
    # lines cross their devices where the answer's largest context ends. margin_held: --fit's margin had to stay free
    searched: Settings | None = field(default=None, repr=False, compare=False)
    searched_on: tuple[Target, ...] = field(default=(), repr=False, compare=False)
    margin_held: bool = False
    # which reading max_context is (one per plan, whatever -c was asked): "all_on_gpu" (llama-server --fit placing
    # the layers: the largest -c at which it moves nothing to system memory), "layers_in_ram" (no context keeps
    # every layer on the GPU: the largest -c that starts with --fit moving some there), "starts" (the largest that
    # starts as the settings place it: -ngl given, a CPU run, a pooled engine), "measured" (a stored verified run
    # ran longer: measured.py); None without a max context
    max_context_basis: str | None = None
    # the settings llama-server is given at each -c where --fit places the layers (the user's -ngl / --n-cpu-moe /
    # -ot / -ts, not --fit's choice): past an "all_on_gpu" max context the chart places the layers afresh with them,
    # as `check --ctx N` does (review19 #2); None where --fit places nothing
    refit: Settings | None = field(default=None, repr=False, compare=False)
    # --quant as asked, where the command fetches another file than the type planned (Unsloth's UD-Q4_K_XL, planned
    # as Q4_K_M): the fixes' commands fetch it too (weights.unsloth_command)
    asked_quant: str | None = None

    @property
    def settings(self) -> Settings:
        return self.allocation.settings

    @property
    def rejects(self) -> str | None:
        """A server that starts but rejects the context asked (SGLang's short KV pool): what it does; else None."""
        return rejects_long_requests(self.allocation) if self.verdict == "does_not_fit" else None

    @property
    def quant_run(self) -> str | None:
        """The type the command runs: Unsloth's file where `-q UD-Q4_K_XL` fetches it (sized as its base type's
        mix, quant_substitute says so), else the type planned."""
        return unsloth_fetched(self.model, self.asked_quant, self.settings) or self.weights.quant

    @property
    def quant_substitute(self) -> str | None:
        """Why the sizes are another type's than the file asked for; None where none was substituted."""
        return unsloth_substitute(self.model, self.asked_quant,
                                  unsloth_fetched(self.model, self.asked_quant, self.settings))

    @property
    def runtime_version(self) -> tuple[str, str]:
        return runtime_rules(self.planner or get_runtime(self.runtime))

    def memory_totals(self) -> dict[str, int]:
        devs = self.allocation.devices
        return {k: sum(getattr(d, k) for d in devs) for k in ("weights", "kv_cache", "compute", "overhead", "total")}

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of `runlocal check --json` and /api/v1/check (add keys, never rename)."""
        s, a, m = self.settings, self.allocation, self.model
        return {
            "model": {"id": m.id, "architecture": m.architecture, "family": m.family, "params": m.params,
                      "active_params": m.active_params, "vision_params": m.vision_params,
                      "weights_bytes": self.weights.total, "source": m.source, "repo_id": m.repo_id},
            "runtime": self.runtime,
            # the release whose rules were used ("current" unless --runtime NAME==VERSION), and what they are
            "runtime_version": self.runtime_version[0],
            "runtime_rules": self.runtime_version[1],
            # quant: the type the command runs; quant_sized_as: the type whose sizes were planned (they differ for
            # Unsloth's UD-* files, planned as their base type's mix: quant_substitute says why, else null)
            "settings": {"ctx": s.ctx, "quant": self.quant_run, "quant_sized_as": self.weights.quant,
                         "quant_substitute": self.quant_substitute, "cache_type_k": s.cache_type_k,
                         "cache_type_v": s.cache_type_v, "parallel": s.parallel,
                         "batch": s.llamacpp.batch, "ubatch": s.llamacpp.ubatch,
                         "flash_attn": s.llamacpp.flash_attn, "n_gpu_layers": s.llamacpp.n_gpu_layers,
                         "gpu_memory_utilization": s.vllm.gpu_memory_utilization, "tp": s.tp, "pp": s.pp,
                         "prompt_tokens": s.prompt_tokens},
            "memory": {**self.memory_totals(), "devices": [
                {"name": d.name, "kind": d.kind, "capacity": d.capacity, "weights": d.weights, "kv_cache": d.kv_cache,
                 "compute": d.compute, "overhead": d.overhead, "total": d.total} for d in a.devices]},
            "kv_bytes_per_token": a.kv_bytes_per_token,
            # what that figure counts, as the text output labels it (kv_per_token_counts)
            "kv_bytes_per_token_counts": kv_per_token_counts(self),
            # sliding-window layers holding their window only (llama.cpp iSWA): the KV column's two terms, else null
            "kv_split": ({"full_attention_bytes_per_token": a.kv_split[0], "sliding_window_bytes": a.kv_split[1]}
                         if a.kv_split else None),
            "kv_cache_tokens": a.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            # requests at once as the text says them (requests_at_once): llama-server's slots, a pool's requests
            "requests_at_once": requests_at_once(self),
            "max_context": self.max_context,
            "max_context_basis": self.max_context_basis,
            "verdict": self.verdict,
            "conditions": list(self.conditions),
            "refusal": a.refusal,
            # a server that starts but rejects the context asked (SGLang's short KV pool): what it does, else null
            "rejects": self.rejects,
            "compromise": a.compromise,
            # source: "predicted" (the speed model), "measured" (stored runs: measured.py) or "mixed" (a measured
            # prefill beside a predicted decode); always present (review21 #11)
            "speed": {"source": "predicted", **self.speed},
            "measured": self.measured,
            "command": self.command,
            "fixes": [f.to_dict() for f in self.fixes],
            "explain": [{"label": st.label, "formula": st.formula, "value": st.value, "source": st.source}
                        for st in self.steps],
            # which checkpoint vLLM / SGLang pull and why (weights.pooled_checkpoint), beside the engine's own
            "assumptions": [st.formula for st in self.steps if st.label == "checkpoint"] + list(a.assumptions),
        }


def kv_where(plan: Plan) -> str:
    """'on each GPU (TP 2)' where the KV bytes per token are one rank's (vLLM / SGLang over TP / PP ranks), else ''."""
    s = plan.settings
    ranks = [f"TP {s.tp}"] * (s.tp > 1) + [f"PP {s.pp}"] * (s.pp > 1)
    per_rank = bool(ranks) and plan.planner is not None and plan.planner.pools_kv
    return f"on each GPU ({' × '.join(ranks)})" if per_rank else ""


def requests_at_once(plan: Plan) -> dict[str, Any] | None:
    """Requests at once as the runtime schedules them, the one figure and sentence the CLI, the site and JSON give:
    llama-server's slots (--parallel; auto is AUTO_SLOTS) with, where larger, the most slots that fit at this
    context; a pooled engine's KV pool in requests of the full context (vLLM's own "Maximum concurrency"), capped by
    --max-num-seqs. ``requests`` the figure, ``fits_at_context`` max_concurrency, ``text`` the terminal's words."""
    s, conc = plan.settings, plan.max_concurrency
    if conc is None or plan.verdict == "does_not_fit":
        return None
    if plan.planner is not None and plan.planner.pools_kv or plan.allocation.kv_cache_tokens:
        capped = 1 < s.parallel < conc
        text = f"the KV pool holds {conc:.1f} requests of {s.ctx:,} tokens at once" + (
            f" (--max-num-seqs {s.parallel} caps it at {min(conc, s.parallel):.1f})" if capped else "")
        return {"requests": min(conc, s.parallel) if capped else conc, "fits_at_context": conc, "text": text}
    slots = AUTO_SLOTS if s.parallel == PARALLEL_AUTO else s.parallel
    flag = engine(plan.runtime).parallel_flag
    serves = (f"serves {slots} requests at once ({flag}{slots})" if slots > 1
              else f"serves one request at a time ({flag}1)")
    more = int(conc)
    text = serves + (f"; up to {flag}{more} fits at this context" if more > slots else "")
    return {"requests": slots, "fits_at_context": conc, "text": text}


def ram_condition(plan: Plan) -> str:
    """" if RAM ≥ 76 GiB" where the verdict holds only with more RAM than the host shows (an assumed size, drawn
    over-full: check._assumed_ram_shown), as the plan's condition gives the size; else "". The terminal's verdict line
    and the site's verdict badge both end with it."""
    import re

    short = any(d.kind == "cpu" and 0 < d.capacity < d.total for d in plan.allocation.devices)
    found = (re.search(r"if RAM ≥ (\d+) GiB", c) for c in getattr(plan, "conditions", ()))
    size = next((m.group(1) for m in found if m), None)
    return f" if RAM ≥ {size} GiB" if short and size and plan.verdict != "does_not_fit" else ""


def concurrency_phrase(plan: Plan) -> str | None:
    """requests_at_once's words, as the terminal prints them."""
    said = requests_at_once(plan)
    return said["text"] if said else None


def kv_per_token_phrase(plan: Plan) -> str:
    """The KV bytes a token adds, labelled for what they count: one rank's share where vLLM / SGLang split the
    model over tensor- or pipeline-parallel ranks (their pools are per rank: runtimes/vllm.py kv_groups, sglang.py
    _kv_pool), else the whole model's; with sliding-window layers (llama.cpp's iSWA cache) the layers that grow with
    the context apart from the windows' fixed bytes — the figures the KV column adds up from."""
    a = plan.allocation
    where = kv_where(plan) or "for the whole model"
    if a.kv_split:
        full, window = a.kv_split
        return (f"KV {format_bytes(full)}/token in the full-attention layers + {format_bytes(window)} held by the "
                f"sliding-window layers (their windows: the same at any longer context) {where}")
    return f"KV {format_bytes(a.kv_bytes_per_token)}/token {where}" + _recurrent_words(plan)


def _recurrent_words(plan: Plan) -> str:
    """A hybrid model's recurrent state beside its KV per token (the KV column holds both): its bytes from the plan's
    own "recurrent state" step (llama.cpp: llamacpp_kv_words.recurrent_step), fixed whatever the context."""
    step = next((st for st in plan.allocation.steps if st.label == "recurrent state"), None)
    held = step.value.removesuffix(" B").replace(",", "") if step is not None else ""
    if not held.isdigit():
        return ""
    return f" + recurrent state {format_bytes(int(held))} (the same at any context)"


def kv_per_token_counts(plan: Plan) -> dict[str, Any]:
    """JSON's label for ``kv_bytes_per_token``, the text's words beside it: ``per`` "gpu_rank" (one TP / PP rank's
    share, vLLM / SGLang) or "model" (every device together); ``window_layers_apart`` where the sliding-window
    layers hold their window only (``kv_split`` then gives the KV column's two terms, and ``kv_bytes_per_token``
    counts every attention layer as if it held every token); ``text`` the words the terminal prints."""
    s = plan.settings
    return {"per": "gpu_rank" if kv_where(plan) else "model", "tp": s.tp, "pp": s.pp,
            "window_layers_apart": plan.allocation.kv_split is not None, "text": kv_per_token_phrase(plan)}


# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QuickPlan:
    """One configuration planned and judged, without the searches and fixes of make_plan (`best`, `compare`)."""

    weights: WeightEstimate
    allocation: Allocation
    verdict: str
    speed: dict[str, float | None]
    speed_steps: tuple[Step, ...]


def quick_plan(model: ModelSpec, settings: Settings, targets: list[Target], *, runtime: Runtime | None = None,
               weights: WeightEstimate | None = None) -> QuickPlan:
    """Plan ``settings`` as given (weights as settings.quant says): the allocation, its verdict, its speed."""
    runtime = runtime or get_runtime(settings.runtime)
    weights = weights or estimate(model, settings.quant)
    alloc = runtime.allocate(model, weights, settings, targets)
    tokens, steps = speed(model, weights, alloc, targets)
    return QuickPlan(weights, alloc, verdict(alloc, model), tokens, steps)


def _check_settings(settings: Settings) -> None:
    if settings.ctx is not None and settings.ctx <= 0:
        raise InputError(f"ctx: must be a positive number of tokens, got {settings.ctx}")
    if settings.parallel <= 0 and settings.parallel != PARALLEL_AUTO:
        raise InputError(f"parallel: must be at least 1, got {settings.parallel}")


def judge_plan(model: ModelSpec, settings: Settings, targets: list[Target], *,
               runtime: Runtime | None = None) -> QuickPlan:
    """The allocation and verdict make_plan would give, without its searches and fixes (the same quick_plan of
    the same settings): what a question that turns on the verdict alone needs (hardware/assumed_ram.py)."""
    _check_settings(settings)
    runtime = runtime or get_runtime(settings.runtime)
    settings, _ = with_default_quant(model, settings)
    return quick_plan(model, settings, targets, runtime=runtime)


def make_plan(model: ModelSpec, settings: Settings, targets: list[Target], *, with_fixes: bool = True,
              runtime: Runtime | None = None, with_concurrency: bool = True) -> Plan:
    """The whole answer for one request. Pure: ``runtime`` is the planner with whatever server environment the
    caller read (check.py reads Ollama's); without it, the runtime's defaults. with_concurrency=False leaves out
    the search for the most parallel requests of a llama.cpp-like runtime (max_concurrency None), for a caller
    that does not show it (compare.py): up to nine more plans, each a --fit search."""
    _check_settings(settings)
    runtime = runtime or get_runtime(settings.runtime)
    asked_quant = settings.quant
    settings, lead_steps = with_default_quant(model, settings, tuple(t.name for t in targets if t.kind != "cpu"),
                                              getattr(runtime, "version", None))
    asked, rules = runtime_rules(runtime)
    lead_steps = (Step("runtime version", rules, asked, "runtimes/versions.py"), *lead_steps)
    quick = quick_plan(model, settings, targets, runtime=runtime)
    weights, alloc = quick.weights, quick.allocation
    s = alloc.settings
    trained = model.max_position_embeddings
    # the search reaches at least the context asked for: running past the trained context is allowed
    # (llama.cpp warns), it is a quality question, said in a step (llama.cpp-like: past the trained context only
    # where the trained context starts, so the figure up to it is the same for every -c)
    limit = max(trained or 131072, s.ctx or 0)
    if trained and s.ctx and s.ctx > trained:
        from .runtimes.published import beyond_trained_context

        lead_steps += (Step("trained context", beyond_trained_context(model, s.ctx, runtime.name) or "",
                            f"{trained:,}", "config.json max_position_embeddings, rope_scaling"),)
    search_steps: tuple[Step, ...] = ()
    searched, held, basis = s, False, "starts"
    if runtime.pools_kv:
        # the longest max_model_len the engine starts with: one request of it fits the pool (vLLM's
        # estimate_max_model_len bisects the same way). Not simply the pool's tokens: a sliding-window or Mamba
        # group holds a window or a state per request, so a hybrid model's request can outgrow "KV tokens"
        # a release that serves no longer context whatever is asked (vLLM 0.9.1's tokenizer cap) ends the search there
        cap = getattr(runtime, "served_context_cap", lambda _: None)(model)
        max_ctx = (longest_context(runtime, model, weights, s, targets, hi=min(limit, cap or limit),
                                   granule=POOL_GRANULE, ok=starts_one_request) if alloc.kv_cache_tokens else None)
        max_conc = alloc.max_concurrency
    else:
        max_ctx, search_steps, searched, held, basis = _layered_max_context(runtime, model, weights, settings, alloc,
                                                                            targets)
        max_conc = None
        if with_concurrency:
            most = largest_guided(1, 512, lambda n: fits_room(runtime, model, weights, s.with_(parallel=n), targets))
            max_conc = float(most) if most else None
    plan = Plan(model, runtime.name, weights, alloc, quick.verdict, max_ctx, max_conc,
                unsloth_command(model, asked_quant, runtime, s),
                steps=lead_steps + _weight_steps(model, weights, runtime.name) + alloc.steps
                + quick.speed_steps + search_steps, speed=quick.speed, planner=runtime, asked_quant=asked_quant,
                searched=searched, searched_on=tuple(targets), margin_held=held,
                max_context_basis=basis if max_ctx else None, refit=_refit_settings(settings, s))
    if with_fixes and plan.verdict in ("does_not_fit", "tight"):
        plan = replace(plan, fixes=tuple(sorted(suggest_fixes(plan, targets, settings), key=lambda f: f.cost)))
    return plan


def _layered_max_context(runtime: Runtime, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                         alloc: Allocation, targets: list[Target]):
    """A llama.cpp-like plan's max context, one reading whatever -c was asked (review18 finding 3: 12,288 / 15,616 /
    131,072 for one machine before): where llama-server --fit places the layers (-ngl left unset, a GPU), the largest
    -c at which it keeps every layer on the GPU and cuts no context ("all_on_gpu"); only where no context does, the
    largest -c that starts with --fit moving layers to system memory, placed again at each -c as llama-server would
    ("layers_in_ram"; with the layout frozen at the context asked the answer moved with it: gpt-oss-120b on an RTX 4090,
    76,544 at 4K and 122,112 at 64K with 128 GiB RAM); else the largest that starts as the settings place it
    ("starts"). Returns (max context, the --explain step, the settings the chart draws, margin held, the reading)."""
    s = alloc.settings
    trained = model.max_position_embeddings
    chosen_ngl = s.llamacpp.n_gpu_layers
    placed = settings.llamacpp.n_gpu_layers is None and chosen_ngl is not None
    fit_cpu_moe = 0 if settings.llamacpp.n_cpu_moe else s.llamacpp.n_cpu_moe   # experts --fit held back
    # on several GPUs --fit writes its own -ts and, for MoE, -ot rules holding experts back (llamacpp_fit_devices)
    fit_ot = not settings.llamacpp.override_tensor and any(buf == "CPU" for _, buf in s.llamacpp.override_tensor)
    moved = placed and (fit_ot or not all_layers_on_gpu(model, chosen_ngl, fit_cpu_moe))
    mine = dict(n_cpu_moe=settings.llamacpp.n_cpu_moe, override_tensor=settings.llamacpp.override_tensor,
                tensor_split=settings.llamacpp.tensor_split)     # the user's, --fit's own -ts / -ot dropped
    relaunch = s.with_(n_gpu_layers=settings.llamacpp.n_gpu_layers, **mine) if moved else s
    fresh = s.with_(n_gpu_layers=settings.llamacpp.n_gpu_layers, **mine)
    held = placed and bool(s.llamacpp.fit) and any(t.kind != "cpu" for t in targets)   # a CPU run has no GPU
    tried: list[tuple[int, bool]] = []
    how: list[str] = []
    # on one GPU there is no split to choose: every layer pinned there with --fit's margin held is what --fit keeps (a
    # cheap search: the bytes without compute buffers rule most contexts out unplanned); over several, --fit's -ts
    # moves with the context, so each context is planned as llama-server would (--fit afresh: 13,056 for Llama-3.1-70B
    # on 2 × RTX 3090, where the split --fit chose at the context asked said 12,288 or 15,616)
    one_gpu = sum(t.kind != "cpu" for t in targets) == 1
    # (where --fit moved nothing, its settings are that already: the plans made for the context asked are reused)
    pinned = s.with_(n_gpu_layers=model.n_layers + 1, n_cpu_moe=mine["n_cpu_moe"] or 0) if moved else s
    max_ctx = longest_context(runtime, model, weights, (pinned if one_gpu else fresh) if held else relaunch,
                              targets, hi=trained or 131072, beyond=s.ctx,
                              ok=keeps_every_layer if held and not one_gpu else fits,
                              margin_held=held and one_gpu, tried=tried, how=how)
    # the chart draws every layer held on the GPU (its lines cross the limit, capacity less --fit's margin, about where
    # the answer ends): the layers and split --fit chose at the context asked
    basis, searched = ("all_on_gpu", pinned) if held else ("starts", relaunch)
    if held and max_ctx is None and moved:
        tried, how, held, basis, searched = [], [], False, "layers_in_ram", relaunch
        max_ctx = longest_context(runtime, model, weights, relaunch, targets, hi=trained or 131072, beyond=s.ctx,
                                  tried=tried, how=how)
    step = context_search_step(
        tried, max_ctx, *(("keeps every layer on the GPU", "does not") if held else ("starts", "does not start")),
        asked=s.ctx, asked_passes=fits(alloc) and not moved if held else fits(alloc), how=how)
    return max_ctx, (step,), searched, held, basis


def _refit_settings(asked: Settings, placed: Settings) -> Settings | None:
    """The settings as llama-server gets them at another -c: the placement the user gave (none: --fit chooses again),
    the rest as planned. None where the user placed the layers (-ngl given) or --fit is off: nothing to place again."""
    mine = asked.llamacpp
    if mine.n_gpu_layers is not None or not placed.llamacpp.fit:
        return None
    return placed.with_(n_gpu_layers=None, n_cpu_moe=mine.n_cpu_moe, override_tensor=mine.override_tensor,
                        tensor_split=mine.tensor_split)


def all_layers_on_gpu(model: ModelSpec, n_gpu_layers: int | None, n_cpu_moe: int) -> bool:
    """llama.cpp's -ngl rule: -ngl k puts every repeating layer and the output layer on the GPU when k > n_layer
    (src/llama-model.cpp load_tensors), and no --n-cpu-moe holds experts back on the CPU. make_plan asks it of --fit's
    choice, render/text.py of the plan's settings."""
    return n_gpu_layers is not None and n_gpu_layers > model.n_layers and not n_cpu_moe


@per_model
def _params_step(model: ModelSpec) -> Step:
    """The parameter count's step, once per model (a sum over every tensor: ~0.4 ms for a 1,700-tensor MoE)."""
    return Step("parameters", f"{len(model.tensors):,} tensors summed", f"{model.params:,}"
                + (f" ({model.active_params:,} active per token)" if model.n_experts else ""), model.source)


def _weight_steps(model: ModelSpec, w: WeightEstimate, runtime: str) -> tuple[Step, ...]:
    steps = [_params_step(model)]
    detail = ", ".join(f"{k} {format_bytes(v)}" for k, v in w.by_kind.items())
    formula, source = w.formula, w.source
    if engine(runtime).hub_checkpoints and w.source == "src/llama-quant.cpp" and w.quant.lower() in _FLOAT_FTYPES:
        # a 16-bit width is also a GGUF file type, so weights.py counted it by llama.cpp's type table; vLLM and SGLang
        # load the safetensors checkpoint, whose tensors are at that width: the same count, not a GGUF quantizer's
        formula = f"the checkpoint's tensors at their stored width ({w.quant.upper()}; norms counted at 4 bytes)"
        source = model.repo_id or model.source
    steps.append(Step("weights", f"{formula}: {detail}", f"{w.total:,} B", source))
    if engine(runtime).ggml and (mix := type_mix_step(model, w)) is not None:
        steps.append(mix)
    return tuple(steps)


_FLOAT_FTYPES = ("bf16", "f16", "fp16", "f32", "fp32")


CURVE_POINTS = tuple(2**k for k in range(9, 21))     # 512 … 1M tokens


def _refits_past_max(plan: Plan) -> bool:
    """Past an all-on-GPU max context, llama-server --fit moves layers to RAM at a longer -c rather than failing."""
    return plan.max_context_basis == "all_on_gpu" and plan.refit is not None


def drawn_settings(plan: Plan, ctx: int) -> Settings:
    """The settings the chart plans at ``ctx``: as the max context was searched (every layer held on the GPU, where
    that is its reading) up to the max context; past it, where --fit places the layers, the user's own placement with
    --fit choosing again, as `check --ctx N` plans it, so the point at the context asked is the table's."""
    base = plan.searched or plan.settings
    past = plan.max_context is None or ctx > plan.max_context
    return plan.refit if plan.refit is not None and _refits_past_max(plan) and past else base


def curve_words(plan: Plan) -> str:
    """What the memory chart draws at each context, in one sentence (the site's caption, /api/v1/curve's "drawn")."""
    if _refits_past_max(plan):
        return ("with every layer on the GPU up to the largest context; past it, with the layers llama.cpp's --fit "
                "places at each context, as `check --ctx N` plans it: it moves layers to system RAM, so the GPU's line "
                "stays near its limit and the RAM's grows")
    if plan.max_context_basis == "layers_in_ram":
        return ("with the layers llama.cpp's --fit places at each context (some in system RAM), as `check --ctx N` "
                "plans it")
    return "at each context with the settings of the answer (its layers and split), the context changed"


def curve_contexts(plan: Plan) -> list[int]:
    """The contexts a memory chart plots: powers of two from 512 to the trained context (or the context asked, or
    the largest, if longer), with the context asked and the largest context itself."""
    top = max(plan.model.max_position_embeddings or 131072, plan.settings.ctx or 0, plan.max_context or 0)
    extra = {c for c in (plan.settings.ctx, plan.max_context) if c}
    return sorted({c for c in CURVE_POINTS if c <= top} | extra)


def context_curves(plan: Plan, targets: list[Target], contexts: list[int]) -> list[dict[str, Any]]:
    """Memory on each device of the plan at each context: the plan as its largest context was searched
    (make_plan's ``searched``: where llama-server --fit moved layers off the GPU, --fit places them again at each
    context, as llama-server would when given that -c), so every device stays under its limit up to the largest
    context and one goes over past it — the chart and the verdict tell one story. Each device: its name, kind,
    capacity (a unified host's: what the GPU side leaves of the RAM at the context asked; each point carries its own,
    as verdict.fits judges it), ``limit`` (the capacity less the
    runtime's kept-free bytes where they had to stay free: --fit's margin when every layer stayed on the GPU) and
    points {ctx, total, kv_cache}. ``targets``: used where the plan records none (a plan refused before planning)."""
    from .hardware.unified_memory import with_shared_host
    from .runtimes.llamacpp_compute import many_contexts  # (llama.cpp's graphs built once for every context)

    runtime = plan.planner or get_runtime(plan.runtime)
    base = plan.searched or plan.settings
    on = list(plan.searched_on) or targets
    with many_contexts():
        allocs = [runtime.allocate(plan.model, plan.weights, drawn_settings(plan, c).with_(ctx=c), on)
                  for c in contexts]
    kept_free = getattr(runtime, "kept_free", None)
    kept = kept_free(base, on, held=True) if kept_free is not None and plan.margin_held else {}
    judged = [with_shared_host(a.devices) for a in allocs]    # a unified host: what the GPU side leaves, per context
    out = []
    for i, d in enumerate(plan.allocation.devices):          # (settled: a unified host's capacity as judged)
        points = [{"ctx": c, "total": a[i].total, "kv_cache": a[i].kv_cache, "capacity": a[i].capacity}
                  for c, a in zip(contexts, judged) if i < len(a)]
        out.append({"device": d.name, "kind": d.kind, "capacity": d.capacity,
                    "limit": d.capacity - kept.get(d.name, 0), "points": points})
    return out


__all__ = ["CURVE_POINTS", "DEFAULT_RAM_BANDWIDTH_GBS", "GGUF_DEFAULT_QUANT", "TIGHT_SHARE", "Fix", "Plan", "QuickPlan",
           "context_curves", "curve_contexts", "curve_words", "drawn_settings", "estimate", "is_gguf_quant", "judge_plan",
           "kv_per_token_counts",
           "kv_per_token_phrase", "kv_where", "make_plan", "quick_plan", "requests_at_once", "weights_held",
           "with_default_quant"]
