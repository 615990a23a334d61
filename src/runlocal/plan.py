"""ModelSpec + targets + Settings → Plan: the breakdown, the verdict, the limits that fit, the fixes.

Pure computation: no I/O. Every renderer (text, JSON, HTML) takes the one Plan this returns.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any

from .errors import InputError
from .model.spec import ModelSpec
from .quant import gguf_table
from .quant.formats import WeightEstimate, estimate_weights
from .runtimes import Allocation, Settings, Step, Target, get_runtime
from .runtimes.base import PARALLEL_AUTO, largest
from .units import format_bytes

POOL_GRANULE = 16        # max-context search step of pooled engines: vLLM's KV block; SGLang's pool is per token
TIGHT_SHARE = 0.90       # above 90 % of a device's capacity, a runtime spike or another app tips it over


@dataclass(frozen=True)
class Fix:
    title: str
    command: str
    effect: str
    cost: int            # what the user gives up: 1 context/concurrency, 2 a bit of quality, 3 speed, 4 money

    def to_dict(self) -> dict[str, str]:
        return {"title": self.title, "command": self.command, "effect": self.effect}


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
    conditions: tuple[str, ...] = ()            # what the verdict depends on that nobody stated ("fits if RAM ≥ …")

    @property
    def settings(self) -> Settings:
        return self.allocation.settings

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
            "settings": {"ctx": s.ctx, "quant": self.weights.quant, "cache_type_k": s.cache_type_k,
                         "cache_type_v": s.cache_type_v, "parallel": s.parallel, "batch": s.batch, "ubatch": s.ubatch,
                         "flash_attn": s.flash_attn, "n_gpu_layers": s.n_gpu_layers,
                         "gpu_memory_utilization": s.gpu_memory_utilization, "tp": s.tp, "pp": s.pp},
            "memory": {**self.memory_totals(), "devices": [
                {"name": d.name, "kind": d.kind, "capacity": d.capacity, "weights": d.weights, "kv_cache": d.kv_cache,
                 "compute": d.compute, "overhead": d.overhead, "total": d.total} for d in a.devices]},
            "kv_bytes_per_token": a.kv_bytes_per_token,
            "kv_cache_tokens": a.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "max_context": self.max_context,
            "verdict": self.verdict,
            "conditions": list(self.conditions),
            "refusal": a.refusal,
            "compromise": a.compromise,
            "speed": dict(self.speed),
            "measured": self.measured,
            "command": self.command,
            "fixes": [f.to_dict() for f in self.fixes],
            "explain": [{"label": st.label, "formula": st.formula, "value": st.value, "source": st.source}
                        for st in self.steps],
            "assumptions": list(a.assumptions),
        }


# ------------------------------------------------------------------------------------------------

def is_gguf_quant(quant: str) -> bool:
    return quant.upper() in gguf_table.supported_ftypes()


def estimate(model: ModelSpec, quant: str | None) -> WeightEstimate:
    """Weights as stored (the file read), or as they would be under ``quant``."""
    if quant is None:
        stored = model.file_bytes
        if stored is not None:
            return WeightEstimate(model.file_quant or "file", stored, {model.file_quant or "file": stored},
                                  f"sum of {len(model.tensors):,} tensor sizes in the file", model.source, from_file=True)
        from .quant.formats import ALIASES, QUANT_FORMATS

        dtype = (model.file_quant or "bf16").lower()
        known = ("fp32", "f32", "float32", "fp16", "f16", "float16", "bf16", "bfloat16", *QUANT_FORMATS, *ALIASES)
        # a checkpoint stored quantized (DeepSeek-V3's fp8, gpt-oss's mxfp4, an AWQ repo) is served as stored
        quant = dtype if dtype in known else "bf16"
    mlx = re.fullmatch(r"mlx-([2-8])bit", quant.lower())
    if mlx:   # mlx_lm.convert -q --q-bits N (affine, group 64)
        from .runtimes.mlx import mlx_weight_bytes

        bits = int(mlx.group(1))
        total = mlx_weight_bytes(model, bits=bits)
        return WeightEstimate(f"mlx-{bits}bit", total, {f"mlx-{bits}bit": total},
                              f"linear and embedding weights at {bits} bits + a 16-bit scale and bias per 64; the rest 16-bit",
                              "mlx_lm/utils.py quantize_model")
    if is_gguf_quant(quant):
        by_type = gguf_table.catalog_weights(model, quant.upper())
        if by_type is None:
            from .quant import gguf_mix

            by_type = gguf_mix.weight_bytes_by_type(model, quant.upper())
        total = sum(by_type.values())
        how = "llama.cpp quantizer's per-tensor type mix"
        if model.vision_params:
            how += (f" (the {model.vision_params:,}-parameter vision/audio tower is left out: convert_hf_to_gguf.py"
                    " writes it to a separate --mmproj file)")
        return WeightEstimate(quant.upper(), total, by_type, how, "src/llama-quant.cpp")
    return estimate_weights(model, quant)


def _fits(a: Allocation) -> bool:
    # a KV pool that cannot hold one request of the asked context does not run it, even where the
    # server starts (SGLang rejects such a request; vLLM refuses to start, a refusal already)
    whole_request = a.max_concurrency is None or a.max_concurrency >= 1
    return a.refusal is None and whole_request and all(d.capacity <= 0 or d.total <= d.capacity for d in a.devices)


def _verdict(a: Allocation) -> str:
    if any(d.capacity <= 0 for d in a.devices):
        return "unknown"
    if not _fits(a):
        return "does_not_fit"
    if any(d.total > TIGHT_SHARE * d.capacity for d in a.devices if d.kind != "cpu" or len(a.devices) == 1):
        return "tight"
    if a.compromise:
        return "tight"
    return "fits"


GGUF_DEFAULT_QUANT = "Q4_K_M"   # what `ollama pull` fetches by default, and the usual GGUF download


def with_default_quant(model: ModelSpec, settings: Settings) -> tuple[Settings, tuple[Step, ...]]:
    """Without --quant, a model is planned as the file people download for this runtime (runtimes/published.py:
    Q4_K_M, or gpt-oss's MXFP4 GGUF, for llama.cpp and Ollama; a published mlx-community 4-bit conversion for MLX);
    a quant spelled as users do (mxfp4, q4_k_m) is read as the GGUF type it names on llama.cpp and Ollama."""
    from .runtimes.published import default_quant, gguf_quant

    name = get_runtime(settings.runtime).name
    if settings.quant:
        if name in ("llama.cpp", "ollama") and is_gguf_quant(gguf_quant(settings.quant)):
            return settings.with_(quant=gguf_quant(settings.quant)), ()
        return settings, ()
    if model.source.lower().endswith(".gguf"):
        return settings, ()
    chosen = default_quant(model, name)
    if chosen is None:
        return settings, ()
    quant, why = chosen
    step = Step("weight quant", f"not given: planned as {quant}, {why} (set --quant)", quant, "")
    return settings.with_(quant=quant), (step,)


def make_plan(model: ModelSpec, settings: Settings, targets: list[Target], *, with_fixes: bool = True) -> Plan:
    if settings.ctx is not None and settings.ctx <= 0:
        raise InputError(f"ctx: must be a positive number of tokens, got {settings.ctx}")
    if settings.parallel <= 0 and settings.parallel != PARALLEL_AUTO:
        raise InputError(f"parallel: must be at least 1, got {settings.parallel}")
    runtime = get_runtime(settings.runtime)
    settings, lead_steps = with_default_quant(model, settings)
    weights = estimate(model, settings.quant)
    alloc = runtime.allocate(model, weights, settings, targets)
    s = alloc.settings
    trained = model.max_position_embeddings
    # the search reaches at least the context asked for: running past the trained context is allowed
    # (llama.cpp warns), it is a quality question, said in a step
    limit = max(trained or 131072, s.ctx or 0)
    if trained and s.ctx and s.ctx > trained:
        from .runtimes.published import beyond_trained_context

        lead_steps += (Step("trained context", beyond_trained_context(model, s.ctx, runtime.name) or "",
                            f"{trained:,}", "config.json max_position_embeddings, rope_scaling"),)
    granule = 256

    def alloc_at(**changes) -> Allocation:
        return runtime.allocate(model, weights, s.with_(**changes), targets)

    if runtime.pools_kv:
        # the longest max_model_len the engine starts with: one request of it fits the pool (vLLM's
        # estimate_max_model_len bisects the same way). Not simply the pool's tokens: a sliding-window or Mamba
        # group holds a window or a state per request, so a hybrid model's request can outgrow "KV tokens"
        def starts(units: int) -> bool:
            a = alloc_at(ctx=units * POOL_GRANULE)
            return a.refusal is None and (a.max_concurrency or 0) >= 1

        units = largest(1, max(1, limit // POOL_GRANULE), starts) if alloc.kv_cache_tokens else None
        max_ctx = units * POOL_GRANULE if units else None
        max_conc = alloc.max_concurrency
    else:
        max_ctx_units = largest(1, max(1, limit // granule), lambda n: _fits(alloc_at(ctx=n * granule)))
        max_ctx = max_ctx_units * granule if max_ctx_units else None
        max_conc = largest(1, 512, lambda n: _fits(alloc_at(parallel=n)))
        max_conc = float(max_conc) if max_conc else None
    speed, speed_step = _speed(model, weights, alloc, targets)
    plan = Plan(model, runtime.name, weights, alloc, _verdict(alloc), max_ctx, max_conc,
                runtime.command(model, s), steps=lead_steps + _weight_steps(model, weights) + alloc.steps + speed_step,
                speed=speed)
    if with_fixes and plan.verdict in ("does_not_fit", "tight"):
        from .fixes import suggest_fixes

        plan = _with_fixes(plan, suggest_fixes(plan, targets))
    return plan


def _with_fixes(plan: Plan, fixes: list[Fix]) -> Plan:
    from dataclasses import replace

    return replace(plan, fixes=tuple(sorted(fixes, key=lambda f: f.cost)))


DEFAULT_RAM_BANDWIDTH_GBS = 89.6   # dual-channel DDR5-5600: 2 × 8 B × 5600 MT/s, when --ram names no device


def _speed(model: ModelSpec, weights: WeightEstimate, alloc: Allocation, targets: list[Target]):
    """Decode and prefill tokens/s for this allocation (hardware/speed.py: bytes read per token over each
    device's fitted bandwidth share, FLOPs per token over its fitted compute share)."""
    from .hardware.speed import allocation_speed

    speed, steps = allocation_speed(model, weights.quant, alloc, targets, DEFAULT_RAM_BANDWIDTH_GBS)
    return speed, tuple(Step(*st) for st in steps)


def _weight_steps(model: ModelSpec, w: WeightEstimate) -> tuple[Step, ...]:
    steps = [Step("parameters", f"{len(model.tensors):,} tensors summed", f"{model.params:,}"
                  + (f" ({model.active_params:,} active per token)" if model.n_experts else ""), model.source)]
    detail = ", ".join(f"{k} {format_bytes(v)}" for k, v in w.by_kind.items())
    steps.append(Step("weights", f"{w.formula}: {detail}", f"{w.total:,} B", w.source))
    return tuple(steps)


def memory_curve(model: ModelSpec, settings: Settings, targets: list[Target],
                 contexts: list[int]) -> list[dict[str, int]]:
    """Memory on the most loaded device at each context: the line the page draws against capacity."""
    runtime = get_runtime(settings.runtime)
    settings, _ = with_default_quant(model, settings)
    # the curve shows where memory crosses the card at each context: llama.cpp's --fit would instead move
    # layers to the CPU to stay under it
    settings = settings.with_(fit=False)
    weights = estimate(model, settings.quant)
    points = []
    for ctx in contexts:
        alloc = runtime.allocate(model, weights, settings.with_(ctx=ctx), targets)
        dev = max(alloc.devices, key=lambda d: d.total / d.capacity if d.capacity else 0)
        points.append({"ctx": ctx, "total": dev.total, "kv_cache": dev.kv_cache})
    return points
