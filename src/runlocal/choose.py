"""Choosing hardware: which catalog devices run a model (`best`), devices side by side (`compare`, in
compare.py), what runs on one machine (`models --fits`), and owning against renting (`cost`).

Pure computation over the embedded catalogs (devices.json, cloud_prices.json, models.json): no network,
no files outside the package. Every verdict comes from the same runtime planners `runlocal check` uses;
the catalog-wide "what fits here" list comes from the vectorized sweep (sweep.py).

Ranking in `best`: for each catalog device (and 2×, 4×, 8× the same discrete card when one is not
enough and the runtime splits a model over GPUs) the highest-quality weight format of the runtime's
ladder that fits whole on the device(s) at the asked context, its predicted decode tokens/s
(hardware/speed.py), and that speed per dollar of purchase price (count × unit price). Devices without
a price in the catalog are listed apart, unranked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .amounts import check_amount
from .errors import InputError
from .model.spec import ModelSpec
from .runtimes import Settings, Target, engine, get_runtime

DEFAULT_CTX = 8192
# plan_fit: weights in RAM beyond what the runtime always keeps there, as a share of all, above which a plan is
# offloaded (not a run held whole)
HOST_TOLERANCE = 0.01
MULTI_COUNTS = (1, 2, 4, 8)

# Weight formats tried per runtime, best quality first. The GGUF ladder stops at Q4_K_M by default
# (below it quality drops measurably); --quant names any single format instead.
QUANT_LADDERS: dict[str, tuple[str, ...]] = {
    "llama.cpp": ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M"),
    "ollama": ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M"),
    "vllm": ("bf16", "fp8", "awq"),
    "sglang": ("bf16", "fp8", "awq"),
    "mlx": ("bf16", "mlx-8bit", "mlx-4bit"),
    "transformers": ("bf16", "int8", "nf4"),
}

# Owning: purchase price spread evenly over this many years, electricity at TDP × utilisation.
DEFAULT_YEARS = 3
DEFAULT_HOURS_PER_DAY = 8.0
DEFAULT_UTILIZATION = 1.0       # share of TDP drawn while running: 1.0 is the upper bound
# Assumed electricity price, USD/kWh: a round figure inside the range of US residential averages by state
# in EIA's Electric Power Monthly table 5.6.A (April 2025: 12.83 ¢ Missouri … 32.28 ¢ Connecticut).
DEFAULT_KWH_PRICE = 0.18
KWH_PRICE_SOURCE = "https://www.eia.gov/electricity/monthly/epm_table_grapher.php?t=table_5_06_a"


# ------------------------------------------------------------------------------------------ data

@lru_cache(maxsize=1)
def device_records() -> dict[str, dict[str, Any]]:
    from importlib.resources import files

    raw = json.loads(files("runlocal.data").joinpath("devices.json").read_text(encoding="utf-8"))
    return {d["id"]: d for d in raw["devices"]}


@lru_cache(maxsize=1)
def cloud_prices() -> dict[str, Any]:
    """The hourly cloud price table (data/cloud_prices.json): each row a device id, provider, USD per GPU-hour,
    the provider's page and the dates it was read."""
    from importlib.resources import files

    return json.loads(files("runlocal.data").joinpath("cloud_prices.json").read_text(encoding="utf-8"))


def rent_offers(device_id: str, count: int = 1) -> list[dict[str, Any]]:
    """Cloud offers for ``count`` of this device, cheapest first (offers sold only in larger nodes left out)."""
    rows = [r for r in cloud_prices()["prices"]
            if r["device"] == device_id and r.get("usd_per_gpu_hour") and r.get("min_gpus", 1) <= max(count, 1)]
    return sorted(rows, key=lambda r: r["usd_per_gpu_hour"])


@dataclass(frozen=True)
class Price:
    usd: float | None           # for one device
    kind: str | None            # "launch" | "used" | "given"
    source: str | None          # URL
    note: str | None = None
    as_of: str | None = None    # launch: the launch year; used: the source's date, or "retrieved <date>" if it states none


def device_price(dev, *, used: bool = False) -> Price:
    """Launch price (the catalog's), or with ``used`` the used-market price where the catalog has one; a
    device without a used price falls back to its launch price and the note says so."""
    from .hardware.catalog import load_sources

    sources = load_sources()
    raw = device_records().get(dev.id, {})
    if used and raw.get("used_price_usd"):
        src = raw.get("used_price_source")
        return Price(float(raw["used_price_usd"]), "used", sources.get(src, src) if src else src,
                     as_of=raw.get("used_price_as_of"))
    note = "no used-market price in the catalog; launch price used" if used else None
    if dev.launch_price_usd and raw.get("launch_price_source"):
        # a Mac's announced starting price (Apple's newsroom, dated): the whole computer in the configuration named
        config = f"the launch price of the {raw['launch_price_config']}"
        return Price(float(dev.launch_price_usd), "launch", raw["launch_price_source"],
                     f"{note}; {config}" if note else config, as_of=raw.get("launch_price_as_of"))
    if dev.launch_price_usd:
        year = getattr(dev, "launch_year", None)
        return Price(float(dev.launch_price_usd), "launch", sources.get(dev.source, dev.source) or None, note,
                     as_of=str(year) if year else None)
    return Price(None, None, None, f"no price in the catalog: {no_price_reason(dev)}")


def no_price_reason(dev) -> str:
    """Why a catalog device has no purchase price (cost's owning column says it instead of a blank)."""
    family = str(getattr(dev, "family", "") or "")
    if dev.kind == "cpu" or family.startswith("cpu-"):
        return "a RAM configuration, not a product with one price"
    if family.startswith(("m1", "m2", "m3", "m4", "m5")) or getattr(dev, "vendor", "") == "apple":
        return ("sold only inside a Mac, and Apple announces the starting price of each Mac's base configuration "
                "only: this chip and memory is not one")
    if family.startswith("strix-halo"):
        return ("sold inside mini PCs and laptops; the catalog has a dated price for the Framework Desktop's 128 GB "
                "configuration only (no dated source was found for this one)")
    if family.startswith(("jetson", "gh200")):
        return "sold as a module or whole system, not as a card"
    if getattr(dev, "kind", "") == "unified" and getattr(dev, "vendor", "") in ("amd", "intel"):
        return "an integrated GPU, sold only inside a laptop or mini PC"
    if family.startswith(("v100", "a100", "h100", "h200", "b200", "t4", "a10", "l4", "l40", "mi2", "mi3")):
        return "a data-center part: NVIDIA and AMD publish no list price, it is sold by quote through OEMs"
    return "no launch price found in the sources"


# ------------------------------------------------------------------------------------------ planning

def runtime_runs_on(runtime: str, dev) -> bool:
    """Whether a runtime runs on a catalog device at all: MLX only on Apple silicon, vLLM and SGLang on
    CUDA/ROCm GPUs, Transformers on CUDA/ROCm/MPS and CPU, llama.cpp and Ollama everywhere."""
    return engine(get_runtime(runtime).name).runs_on(dev.kind, dev.backends)


def device_targets(dev, count: int = 1) -> list[Target]:
    """The runtime targets for ``count`` × a catalog device, as `check --gpu` builds them (GPUs get the default
    32 GiB of host RAM beside them; a CPU-only entry is its own RAM)."""
    return list(_device_targets(dev.id, count))


@lru_cache(maxsize=4096)
def _device_targets(dev_id: str, count: int) -> tuple[Target, ...]:
    # the catalog is fixed for the process: `best` asks for the same few hundred configurations on every call
    from .hardware.targets import targets_from_options

    targets, _ = targets_from_options(spec_string(dev_id, count), None, None)
    return tuple(targets)


def spec_string(dev_id: str, count: int) -> str:
    return dev_id if count == 1 else f"{count}x {dev_id}"


@dataclass(frozen=True)
class Fit:
    """One planned run: the settings, the verdict and the predicted speed."""

    quant: str
    settings: Settings
    verdict: str
    decode_tokens_per_s: float | None
    prefill_tokens_per_s: float | None
    command: str
    peak_bytes: int                 # the most loaded device
    capacity_bytes: int             # its capacity
    offloaded: bool                 # weights left in RAM (beyond what the runtime always keeps there) or on disk

    @property
    def runs(self) -> bool:
        return self.verdict in ("fits", "tight") and not self.offloaded


def refuse_unloadable(model: ModelSpec, planner, quant: str | None = None):
    """The planner, unless its named build cannot load the model's architecture: then nothing is ranked, and one line
    says so, as `check`'s verdict does (runtimes/arch_support.py); likewise a --quant it cannot load (refuse_quant)."""
    from .runtimes.arch_support import planner_refusal

    refused, _, _ = planner_refusal(model, planner)
    if refused:
        raise InputError(f"runtime: {refused}")
    refuse_quant(model, planner.name, quant)
    return planner


def refuse_quant(model: ModelSpec, runtime: str, quant: str | None) -> None:
    """A --quant the runtime cannot load is refused in check's words (weights.with_default_quant →
    quant_support.refuse_unloadable), once, rather than each device's plan failing and nothing being ranked."""
    if quant:
        from .weights import with_default_quant

        with_default_quant(model, Settings(runtime=runtime, quant=quant))


def runtime_label(rt) -> tuple[str, str]:
    """('vllm==0.19.0' or 'vllm', which release's rules the plans use) for best's and compare's header."""
    from .runtimes import runtime_rules

    asked, rules = runtime_rules(rt)
    label = rt.name if asked == "current" else f"{rt.name}=={asked}"
    return label, f"{label}: {rules}"


def _settings(runtime: str, ctx: int, quant: str | None, n_gpus: int, users: int = 1,
              model: ModelSpec | None = None) -> Settings:
    from .runtimes.tensor_parallel import largest_tp

    rt = get_runtime(runtime)
    # one rank per GPU, or the largest TP that splits the heads, as `check` picks it (vLLM refuses the rest)
    tp = (largest_tp(model, n_gpus) if model is not None else n_gpus) if (n_gpus > 1 and rt.pools_kv) else 1
    # llama-server's own --fit places the layers, as `check` plans it (review17 finding 9: a pinned -ngl all could
    # leave 0.3 GiB where --fit would move experts to RAM, a plan check never makes). "Runs on this device" still
    # means held whole on its GPUs: a row where --fit moved weights to RAM is offloaded (plan_fit) and not ranked
    ngl = None
    # users > 1: that many requests of ``ctx`` each at once (llama.cpp --parallel N sizes N slots of ctx;
    # vLLM --max-num-seqs / SGLang --max-running-requests, the pool checked in plan_fit)
    settings = Settings(runtime=rt.name, ctx=ctx, quant=quant, tp=tp).with_(n_gpu_layers=ngl)
    return settings.with_(parallel=users) if users > 1 else settings


def _host_share(model: ModelSpec, runtime: str, quant: str | None, ctx: int) -> int:
    """Weights the runtime keeps in RAM even with unlimited GPU memory (llama.cpp's token embedding)."""
    from .plan import estimate
    from .weights import with_default_quant

    rt = get_runtime(runtime)
    big = [Target("probe", "gpu", 1 << 62, None, 1 << 62), Target("CPU RAM", "cpu", 1 << 62)]
    settings, _ = with_default_quant(model, _settings(runtime, ctx, quant, 1))   # plan_fit's weights, as check's
    alloc = rt.allocate(model, estimate(model, settings.quant), settings, big)
    return sum(d.weights for d in alloc.devices if d.kind == "cpu")


def plan_fit(model: ModelSpec, targets: list[Target], *, runtime: str, ctx: int, quant: str | None,
             host_cache: dict | None = None, users: int = 1, ollama_pull: str | None = None) -> Fit:
    """Plan one configuration without the max-context/concurrency searches `check` runs (fast enough to
    run over the whole catalog). ``ollama_pull``: the hf.co/<repo>:<quant> name given, pulled as given by an Ollama
    plan at that quant (pull_names.ReadModel.ollama_pull), as check's command pulls it."""
    from .runtimes.vllm_unified import starting_share
    from .weights import unsloth_command, with_default_quant

    rt = get_runtime(runtime)
    n_gpus = sum(1 for t in targets if t.kind != "cpu")
    # the weights check plans for this --quant (Unsloth's UD-* as its base mix, a published checkpoint, MLX's
    # names; a format the runtime cannot load refused): one weight path for every entry point
    settings, _ = with_default_quant(model, _settings(runtime, ctx, quant, n_gpus, users, model))
    if (share := starting_share(rt, targets)) is not None:   # vLLM on a DGX Spark / Jetson: the fraction that starts
        settings = settings.with_(gpu_memory_utilization=share)
    if ollama_pull and quant:
        settings = settings.with_(ollama_pull=ollama_pull)
    cache = host_cache if host_cache is not None else {}

    def base() -> int:
        # the weights the runtime keeps in RAM whatever the GPUs (llama.cpp's token embedding)
        key = (rt.name, quant, ctx)
        if key not in cache:
            cache[key] = _host_share(model, rt.name, quant, ctx)
        return cache[key]

    quick, moved = _fitted_plan(model, settings, targets, rt, n_gpus, base)
    weights, alloc, verdict, speed = quick.weights, quick.allocation, quick.verdict, quick.speed
    if users > 1 and alloc.max_concurrency is not None and alloc.max_concurrency < users:
        verdict = "does_not_fit"   # a KV pool (vLLM, SGLang) that holds fewer than ``users`` requests of ctx
    cpu_w = sum(d.weights for d in alloc.devices if d.kind == "cpu")
    # weights on no device at all were left on disk (Transformers' offload_folder): not a run that fits
    offloaded = moved or sum(d.weights for d in alloc.devices) < 0.99 * weights.total
    if n_gpus and cpu_w and not offloaded:
        offloaded = cpu_w > base() + HOST_TOLERANCE * weights.total
    busiest = max(alloc.devices, key=lambda d: d.total / d.capacity if d.capacity else float("inf"))
    # the settings keep the --quant asked (a caller re-plans them through check, which maps it again and says how)
    asked = alloc.settings.with_(quant=quant) if quant else alloc.settings
    return Fit(weights.quant, asked, verdict, speed.get("decode_tokens_per_s"),
               speed.get("prefill_tokens_per_s"), unsloth_command(model, quant, rt, alloc.settings), busiest.total,
               busiest.capacity, offloaded)


def _fitted_plan(model: ModelSpec, settings: Settings, targets: list[Target], rt, n_gpus: int,
                 base: Callable[[], int]):
    """(check's quick plan for these settings, whether --fit surely moves weights to RAM). llama.cpp with the context
    given: --fit's step 1 keeps every layer on the GPUs where each keeps its margin (common/fit.cpp: no changes
    needed), so that plan is the one with every layer pinned there, made without the search; past the margin on one
    GPU it moves layers or experts to RAM (not a run held whole: its plan is not needed), and on several it first
    splits them its own way over the GPUs (planned, as check plans it) — unless a bound says that split too leaves
    weights in RAM: their sum with the KV cache over the GPUs' room, or for a dense model the fill run on each GPU's
    bytes without its compute buffer (llamacpp_fit_bound)."""
    from .plan import quick_plan
    from .runtimes.llamacpp import FIT_MARGIN, LlamaCpp
    from .runtimes.llamacpp_fit_bound import host_weights_at_least

    if (type(rt) is LlamaCpp and rt.has_fit and n_gpus and settings.ctx is not None and settings.llamacpp.fit
            and settings.llamacpp.n_gpu_layers is None):
        pinned = quick_plan(model, settings.with_(n_gpu_layers=model.n_layers + 1), targets, runtime=rt)
        gpus = [d for d in pinned.allocation.devices if d.kind != "cpu"]
        if all(d.total + FIT_MARGIN <= d.capacity for d in gpus):
            return pinned, False
        # one GPU: --fit moves layers or experts to RAM. Several: its own split holds every weight on the GPUs only
        # where each GPU's use, at least its weights and KV cache (the same bytes in all whatever the split), stays
        # under its capacity less the margin; where even their sum does not, it moves some to RAM too
        if n_gpus == 1 or sum(d.weights + d.kv_cache for d in gpus) > sum(d.capacity - FIT_MARGIN for d in gpus):
            return pinned, True
        # a dense model: --fit's own fill run on each GPU's bytes without its compute buffer reaches at least as far
        # as the real fill, so the blocks it leaves in RAM the real plan leaves there too (llamacpp_fit_bound): past
        # plan_fit's tolerance that plan is offloaded, known without its search (a graph simulation per probe)
        on_host = host_weights_at_least(rt, model, pinned.weights, settings, targets)
        if on_host is not None and on_host > base() + HOST_TOLERANCE * pinned.weights.total:
            return pinned, True
    return quick_plan(model, settings, targets, runtime=rt), False


def quant_ladder(runtime: str, quant: str | None = None,
                 model: ModelSpec | None = None) -> tuple[str | None, ...]:
    """Formats to try, best first: ``quant`` alone when given; a .gguf file as it is for the GGUF runtimes (the
    question is which device runs this file); a model whose default format (the one `check` plans, download_quant)
    is off the runtime's ladder, that format alone (gpt-oss: its MXFP4 release, not a Q4_K_M re-quant); else the
    runtime's ladder."""
    if quant:
        return (quant,)
    name = get_runtime(runtime).name
    if (model is not None and engine(name).ggml and model.file_bytes is not None
            and str(model.source).lower().endswith(".gguf")):
        return (None,)
    ladder = QUANT_LADDERS.get(name, QUANT_LADDERS["llama.cpp"])
    if model is not None:
        default = download_quant(model, name)
        if default is not None and default.lower() not in {q.lower() for q in ladder}:
            return (default,)
    return ladder


def best_fit(model: ModelSpec, targets: list[Target], *, runtime: str, ctx: int,
             quants: tuple[str | None, ...], host_cache: dict | None = None, users: int = 1,
             ollama_pull: str | None = None) -> Fit | None:
    """The first (highest-quality) format in ``quants`` that runs whole on the targets, or None."""
    for q in quants:
        try:
            fit = plan_fit(model, targets, runtime=runtime, ctx=ctx, quant=q, host_cache=host_cache, users=users,
                           ollama_pull=ollama_pull)
        except InputError:
            continue       # a format this model or runtime cannot take
        if fit.runs:
            return fit
    return None


def _may_run_whole(model: ModelSpec, targets: list[Target], runtime: str, ctx: int,
                   quants: tuple[str | None, ...], host_cache: dict) -> tuple[str | None, ...]:
    """The formats of ``quants`` that the GPUs of ``targets`` could hold whole, in order: those ruled out could not
    pass Fit.runs, so best_fit over the rest gives the same answer without planning them (most of `best`'s
    configurations, for a large model).

    Fit.runs needs every GPU's total within its capacity (verdict.fits), at least 99 % of the weights placed and at
    most 1 % of them in RAM beyond what the runtime always keeps there (``base``, plan_fit's own figure): so the
    GPUs hold at least 0.98 × weights − base bytes of weights, and a GPU's total is its weights plus non-negative
    KV, compute and overhead. A planner's GPU capacity is the target's, or for MLX past the working set its
    allocator's limit, at most the physical memory: the bound sums the larger of the two per GPU."""
    from .plan import estimate

    gpu_bytes = sum(max(t.capacity, t.total or 0) for t in targets if t.kind != "cpu")
    if gpu_bytes == 0:
        return quants                       # a CPU-only run: nothing to bound here
    kept = []
    for q in quants:
        try:
            weights = estimate(model, q).total
            key = (get_runtime(runtime).name, q, ctx)
            if key not in host_cache:
                host_cache[key] = _host_share(model, runtime, q, ctx)
            base = host_cache[key]
        except Exception:  # a format the model or runtime cannot take: best_fit decides, as it did
            kept.append(q)
            continue
        if gpu_bytes >= 0.98 * weights - base - (1 << 20):      # 1 MiB: float rounding in plan_fit's sums
            kept.append(q)
    return tuple(kept)


@lru_cache(maxsize=8)
def splits_over_gpus(runtime: str) -> bool:
    """Whether the runtime's planner places a model on more than one GPU (else multi-GPU rows are skipped):
    asked of the planner itself with a small catalog model on two GPUs."""
    from .model.catalog import lookup
    from .plan import estimate

    name = get_runtime(runtime).name
    try:
        model = lookup("qwen2.5-0.5b")
        t = [Target("A", "gpu", 1 << 34, 100.0, 1 << 34), Target("B", "gpu", 1 << 34, 100.0, 1 << 34),
             Target("CPU RAM", "cpu", 1 << 35)]
        quant = QUANT_LADDERS.get(name, ("Q8_0",))[0]
        alloc = get_runtime(name).allocate(model, estimate(model, quant), _settings(name, 1024, quant, 2), t)
    except Exception:  # a runtime that cannot plan the probe model is treated as single-GPU
        return False
    return sum(1 for d in alloc.devices if d.kind != "cpu" and d.weights) > 1


# ------------------------------------------------------------------------------------------ best

@dataclass
class BestResult:
    model: ModelSpec
    runtime: str
    ctx: int
    budget_usd: float | None
    used: bool
    users: int = 1
    ranked: list[dict[str, Any]] = field(default_factory=list)
    unpriced: list[dict[str, Any]] = field(default_factory=list)
    over_budget: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        m = self.model
        return {"model": {"id": m.id, "params": m.params, "active_params": m.active_params, "repo_id": m.repo_id},
                "runtime": self.runtime, "ctx": self.ctx, "budget_usd": self.budget_usd,
                "price_basis": "used" if self.used else "launch", "users": self.users,
                "ranked": self.ranked, "unpriced": self.unpriced, "over_budget": self.over_budget,
                "notes": self.notes}


def _row(dev, count: int, fit: Fit, price: Price) -> dict[str, Any]:
    total = price.usd * count if price.usd is not None else None
    per_k = (fit.decode_tokens_per_s / total * 1000
             if (total and fit.decode_tokens_per_s) else None)
    return {"device": dev.id, "name": dev.name, "count": count, "spec": spec_string(dev.id, count),
            "kind": dev.kind, "memory_bytes": dev.memory_bytes * count,
            "bandwidth_gbs": dev.bandwidth_gbs, "quant": fit.quant, "verdict": fit.verdict,
            "peak_bytes": fit.peak_bytes, "capacity_bytes": fit.capacity_bytes,
            "decode_tokens_per_s": fit.decode_tokens_per_s, "prefill_tokens_per_s": fit.prefill_tokens_per_s,
            "price_usd": total, "unit_price_usd": price.usd, "price_kind": price.kind, "price_source": price.source,
            "price_as_of": price.as_of, "price_note": price.note,
            "tokens_per_s_per_1000_usd": round(per_k, 3) if per_k is not None else None,
            "settings": _settings_dict(fit.settings), "command": fit.command}


def _settings_dict(s: Settings) -> dict[str, Any]:
    """The settings that matter for running it (the rest are the runtime's defaults)."""
    out: dict[str, Any] = {"ctx": s.ctx, "quant": s.quant, "tp": s.tp}
    if s.parallel > 1:
        out["parallel"] = s.parallel
    if s.llamacpp.n_gpu_layers is not None:
        out["n_gpu_layers"] = s.llamacpp.n_gpu_layers
    if s.vllm.gpu_memory_utilization is not None:
        out["gpu_memory_utilization"] = s.vllm.gpu_memory_utilization
    return out


def score(decode_tokens_per_s: float | None, price_usd: float | None) -> float | None:
    """Decode tokens/s per 1000 USD: the ranking key."""
    if not decode_tokens_per_s or not price_usd:
        return None
    return decode_tokens_per_s / price_usd * 1000


# best / compare / models --fits hold a model whole on the GPU(s): no verdict turns on the host's RAM size
HOST_RAM_NOTE = ("RAM: no row depends on the host's RAM size — each holds the whole model on its GPU(s); the host "
                 "keeps only what the runtime always leaves there (llama.cpp: the token embeddings)")


def download_quant(model: ModelSpec, runtime: str) -> str | None:
    """The weight format `check` plans without --quant (weights.with_default_quant), or None (as stored)."""
    from .weights import with_default_quant

    settings, _ = with_default_quant(model, Settings(runtime=runtime))
    return settings.quant


def _weights_note(runtime: str, quants: tuple[str | None, ...], common: str | None, quant: str | None) -> list[str]:
    """best's line on which format each row is planned at."""
    if quants == (None,):
        return ["weights: the file as it is (--quant to try another format)"]
    if common is not None:
        return [f"weights: {common} on every device, the file people download for {runtime} "
                "(--quant to pick another; --best-quant-each: each device at the best it holds whole)"]
    if not quant and len(quants) == 1 and quants[0]:
        return [f"weights: {quants[0]} on every device, the format `check` plans for this model on {runtime} "
                "(--quant to pick another)"]
    if not quant:
        return [f"weights: each device at the best of {', '.join(q for q in quants if q)} that fits whole on it"
                " (--quant to fix one)"]
    return []


def best(model: ModelSpec, *, ctx: int | None = None, runtime: str = "llama.cpp", budget_usd: float | None = None,
         used: bool = False, quant: str | None = None, devices: list | None = None,
         counts: tuple[int, ...] = MULTI_COUNTS, users: int = 1, best_quant_each: bool = False,
         ollama_pull: str | None = None) -> BestResult:
    """Every catalog device configuration that runs ``model`` whole at ``ctx``, ranked by decode tokens/s per
    dollar; ``budget_usd`` drops those priced above it; ``used`` prices by the used market where known;
    ``users`` asks for that many requests of ``ctx`` served at once; ``ollama_pull`` as plan_fit's."""
    from .hardware.catalog import load_devices

    ctx = ctx or DEFAULT_CTX
    if ctx <= 0:
        raise InputError(f"ctx: must be a positive number of tokens, got {ctx}")
    check_amount("budget", budget_usd)     # finite, in amounts.COST_BOUNDS
    check_amount("users", users)           # a whole number in amounts.COST_BOUNDS, as HTTP, MCP and the site bound it
    rt = refuse_unloadable(model, get_runtime(runtime), quant)    # 'vllm==0.19.0': its rules (runtimes/versions.py)
    label, rules = runtime_label(rt)
    quants = quant_ladder(rt.name, quant, model)
    common = None if (quant or best_quant_each) else download_quant(model, rt.name)
    if common is not None:
        # one format on every device, so that the rows compare hardware, not formats (issue 20): the file people
        # download for this runtime, as `check` plans it without --quant
        quants = (common,)
    multi = splits_over_gpus(rt.name)
    res = BestResult(model, label, ctx, budget_usd, used, users)
    res.notes.append(f"rules: {rules}")
    if not multi:
        res.notes.append(f"{rt.name}: the planner models one GPU, so multi-GPU configurations are not ranked")
    res.notes += _weights_note(rt.name, quants, common, quant)
    host_cache: dict = {}
    for dev in (devices if devices is not None else load_devices()):
        if not runtime_runs_on(rt.name, dev):
            continue
        # a laptop has one GPU: "2 × RTX 4090 Laptop" is no machine anyone sells
        laptop = device_records().get(dev.id, {}).get("form_factor") == "laptop"
        dev_counts = counts if (dev.kind == "gpu" and multi and not laptop) else (1,)
        for count in dev_counts:
            targets = device_targets(dev, count)
            can_run = _may_run_whole(model, targets, rt.name, ctx, quants, host_cache)
            fit = best_fit(model, targets, runtime=runtime, ctx=ctx, quants=can_run, host_cache=host_cache,
                           users=users, ollama_pull=ollama_pull) if can_run else None
            if fit is None:
                continue
            price = device_price(dev, used=used)
            row = _row(dev, count, fit, price)
            if row["price_usd"] is None:
                res.unpriced.append(row)     # shown apart, with a budget too: never left out unsaid (review21 #5)
            elif budget_usd is not None and row["price_usd"] > budget_usd:
                res.over_budget += 1
            else:
                res.ranked.append(row)
            break          # the smallest count that runs it; more of the same card only costs more
    res.ranked.sort(key=lambda r: (-(r["tokens_per_s_per_1000_usd"] or 0), -(r["decode_tokens_per_s"] or 0),
                                   r["price_usd"]))
    for i, r in enumerate(res.ranked, 1):
        r["rank"] = i
    res.unpriced.sort(key=lambda r: -(r["decode_tokens_per_s"] or 0))
    if used:
        res.notes.append(_used_note(res.ranked))
    if budget_usd is not None:
        res.notes.append(f"budget: {res.over_budget} configuration(s) priced above {budget_usd:,.0f} USD left out;"
                         f" {len(res.unpriced)} without a catalog price listed apart, unranked (unpriced)")
    if users > 1:
        res.notes.append(f"users: {users} requests of {ctx:,} tokens each at once (the KV cache for all of them)")
    res.notes.append(HOST_RAM_NOTE)
    macs = sorted({r["device"] for r in res.ranked if r["kind"] == "apple"})
    boxes = sorted({r["device"] for r in res.ranked if r["kind"] == "unified"})   # DGX Spark, a Strix Halo mini PC
    whole = (f"; a Mac's ({', '.join(macs)}) is Apple's announced starting price of the whole computer in its base "
             "configuration (`runlocal cost` names it; JSON: price_note)" if macs else "")
    whole += (f"; a unified-memory box's ({', '.join(boxes)}) is the whole computer's announced price (JSON: "
              "price_note names the configuration)" if boxes else "")
    res.notes.append(f"price: purchase price of the GPU(s) only (no host system){whole}{_launch_years(res.ranked)};"
                     f" speed: predicted decode tokens/s at half the context ({ctx // 2:,} tokens cached)")
    return res


def _launch_years(ranked: list[dict[str, Any]]) -> str:
    """How old the launch prices ranked are (review21 #5: a 2020 launch price is not what a card costs years later,
    new or used); the year or date each row's price was set is its price_as_of."""
    years = sorted({int(str(r["price_as_of"])[:4]) for r in ranked
                    if r.get("price_kind") == "launch" and str(r.get("price_as_of") or "")[:4].isdigit()})
    if not years:
        return ""
    span = f"{years[0]}" if len(years) == 1 else f"{years[0]} to {years[-1]}"
    return (f"; launch prices are the price when each was announced ({span} here; JSON: price_as_of), not what a"
            " card sells for later, new or used")


def _used_note(ranked: list[dict[str, Any]]) -> str:
    """--used: how many ranked rows carry a recorded used-market price, and that the rest are at launch prices
    (review21 #5: one used price ranked against 59 launch prices, unsaid)."""
    used_ids = sorted({r["device"] for r in ranked if r.get("price_kind") == "used"})
    fallbacks = sum(1 for r in ranked if r.get("price_kind") == "launch")
    mixed = " — second-hand prices ranked against new ones" if used_ids and fallbacks else ""
    return (f"--used: a used-market price is recorded for {len(used_ids)} device(s) here"
            + (f" ({', '.join(used_ids)})" if used_ids else "")
            + (f"; {fallbacks} configuration(s) without one are priced at launch (price_kind says which){mixed}"
               if fallbacks else ""))


# ------------------------------------------------------------------------------------------ cost

def _check_cost_inputs(hours_per_day: float, kwh_price: float, years: float, utilization: float,
                       price_usd: float | None, rent_usd_per_hour: float | None) -> None:
    """One line naming the field for a value ``cost`` cannot use (amounts.COST_BOUNDS)."""
    for name, value in (("hours-per-day", hours_per_day), ("kwh-price", kwh_price), ("years", years),
                        ("utilization", utilization), ("price", price_usd), ("rent-price", rent_usd_per_hour)):
        check_amount(name, value)


def _cost_fit(model: ModelSpec, dev, count: int, runtime: str, ctx: int, quant: str | None,
              ollama_pull: str | None = None) -> Fit | None:
    """cost's run: what check refuses is refused here, not priced as "does not run whole" (the engine on this
    device, the named build's loader, the --quant asked); else the best format that runs whole, or None."""
    from .check import refuse_pairing

    targets = device_targets(dev, count)
    refuse_pairing(get_runtime(runtime).name, spec_string(dev.id, count), targets)
    refuse_unloadable(model, get_runtime(runtime), quant)
    return best_fit(model, targets, runtime=runtime, ctx=ctx, quants=quant_ladder(runtime, quant, model),
                    ollama_pull=ollama_pull)


def _tdp_note(dev, count: int, utilization: float) -> list[str]:
    """What the electricity figure assumes: none without a TDP; the full TDP, said to be an upper bound, when
    --utilization is not given (review21 #12); nothing when the user gave the share."""
    if not dev.tdp_w:
        return [f"{dev.name}: no TDP in the catalog; electricity left out"]
    if utilization != DEFAULT_UTILIZATION:
        return []
    cards = f"{count} × {dev.tdp_w:g} W" if count > 1 else f"{dev.tdp_w:g} W"
    turns = (" (in llama.cpp's layer split the cards take turns, each idle while the others compute)"
             if count > 1 else "")
    return [f"electricity: {cards} TDP drawn for every hour used, an upper bound{turns}; decode, bound by memory,"
            " draws less: --utilization sets the share of TDP"]


def cost(model: ModelSpec, dev, count: int = 1, *, ctx: int | None = None, runtime: str = "llama.cpp",
         quant: str | None = None, hours_per_day: float = DEFAULT_HOURS_PER_DAY, kwh_price: float = DEFAULT_KWH_PRICE,
         years: float = DEFAULT_YEARS, utilization: float = DEFAULT_UTILIZATION, used: bool = False,
         price_usd: float | None = None, rent_usd_per_hour: float | None = None,
         ollama_pull: str | None = None) -> dict[str, Any]:
    """Owning ``count`` × ``dev`` (purchase price over ``years`` + electricity at TDP × utilisation for the hours
    used) against renting the same GPUs for the same hours, per year and per million generated tokens;
    ``ollama_pull`` as plan_fit's."""
    _check_cost_inputs(hours_per_day, kwh_price, years, utilization, price_usd, rent_usd_per_hour)
    ctx = ctx or DEFAULT_CTX
    notes: list[str] = []
    hours_year = hours_per_day * 365

    price = Price(float(price_usd), "given", None) if price_usd else device_price(dev, used=used)
    if price.note:
        notes.append(f"{dev.name}: {price.note}" + (" (set --price)" if price.usd is None else ""))
    purchase = price.usd * count if price.usd is not None else None
    amortised = purchase / years if purchase is not None else None
    kw = (dev.tdp_w * count * utilization / 1000) if dev.tdp_w else None
    notes += _tdp_note(dev, count, utilization)
    kwh_year = kw * hours_year if kw is not None else None
    power_year = kwh_year * kwh_price if kwh_year is not None else None
    own_year = (amortised or 0) + (power_year or 0) if amortised is not None else None

    offers = rent_offers(dev.id, count)
    if rent_usd_per_hour:
        rate, rent_src = float(rent_usd_per_hour), {"provider": "given", "usd_per_gpu_hour": float(rent_usd_per_hour)}
    elif offers:
        rate, rent_src = offers[0]["usd_per_gpu_hour"], offers[0]
        notes += _column_note(dev.name, rent_src)
    else:
        rate, rent_src = None, None
        notes.append(f"{dev.name}: no cloud price in the table (set --rent-price)")
    rent_hour = rate * count if rate is not None else None
    rent_year = rent_hour * hours_year if rent_hour is not None else None

    breakeven = None
    if amortised is not None and rent_hour is not None:
        saving_per_hour = rent_hour - (kw or 0) * kwh_price
        breakeven = round(amortised / 365 / saving_per_hour, 2) if saving_per_hour > 0 else None

    fit = _cost_fit(model, dev, count, runtime, ctx, quant, ollama_pull)
    tokens_year = fit.decode_tokens_per_s * 3600 * hours_year if fit and fit.decode_tokens_per_s else None
    if fit is None:
        notes.append(f"{model.id} does not run whole on {spec_string(dev.id, count)} at ctx {ctx:,}: no token costs")
    elif not quant:
        notes += _cost_quant_note(model, runtime, fit.quant)

    def per_mtok(year_cost):
        return round(year_cost / tokens_year * 1e6, 4) if (year_cost is not None and tokens_year) else None

    if own_year is not None and rent_year is not None:
        cheaper = "own" if own_year < rent_year else "rent"
    else:
        cheaper = None
    def r2(v: float | None) -> float | None:
        return round(v, 2) if v is not None else None

    return {
        "model": model.id, "device": dev.id, "name": dev.name, "count": count, "spec": spec_string(dev.id, count),
        "runtime": get_runtime(runtime).name, "ctx": ctx,
        "run": ({"quant": fit.quant, "verdict": fit.verdict, "decode_tokens_per_s": fit.decode_tokens_per_s,
                 "command": fit.command} if fit else None),
        "assumptions": {"hours_per_day": hours_per_day, "years": years, "utilization": utilization,
                        "kwh_price_usd": kwh_price, "kwh_price_source": None if kwh_price != DEFAULT_KWH_PRICE
                        else f"assumed; state averages: {KWH_PRICE_SOURCE}"},
        "own": {"purchase_usd": purchase, "unit_price_usd": price.usd, "price_kind": price.kind,
                "price_source": price.source, "price_as_of": price.as_of, "amortised_per_year_usd": r2(amortised),
                "power_kw": kw, "kwh_per_year": r2(kwh_year), "electricity_per_year_usd": r2(power_year),
                "per_year_usd": r2(own_year), "per_million_tokens_usd": per_mtok(own_year)},
        "rent": {"usd_per_hour": r2(rent_hour) if rent_hour is None else round(rent_hour, 4),
                 "usd_per_gpu_hour": rate, "offer": rent_src, "per_year_usd": r2(rent_year),
                 "per_million_tokens_usd": per_mtok(rent_year),
                 "offers": [{k: o.get(k) for k in ("provider", "usd_per_gpu_hour", "url", "price_date", "read_on")}
                            for o in offers]},
        "tokens_per_year": int(tokens_year) if tokens_year else None,
        "breakeven_hours_per_day": breakeven,
        "cheaper": cheaper,
        "notes": notes,
    }


def _column_note(device_name: str, offer: dict[str, Any]) -> list[str]:
    """The rent price read from a column its page heads otherwise (cloud_prices.json's ``column``), said; else []."""
    return ([f"rent price: {offer['provider']} {offer['usd_per_gpu_hour']:g} USD/GPU-h for the {device_name} is "
             f"read from {offer['column']}"] if offer.get("column") else [])


def _cost_quant_note(model: ModelSpec, runtime: str, quant: str | None) -> list[str]:
    """Why cost's quant is not check's: cost (like best) prices the highest-quality format that runs whole on the
    hardware, check plans the one people download (runtimes/published.py default_quant)."""
    from .runtimes.published import default_quant

    usual = default_quant(model, get_runtime(runtime).name)
    if quant is None or usual is None or usual[0].upper() == str(quant).upper():
        return []
    return [f"priced at {quant}, the highest-quality format that runs whole here (as `best` ranks); `check` plans "
            f"{usual[0]}, {usual[1]} — `--quant {usual[0]}` prices that one"]


def parse_config(gpu: str):
    """A `--gpu` spec naming N of one catalog device ("4090", "2x3090") → (device, N)."""
    from .hardware.catalog import parse_device_spec

    if not gpu or not gpu.strip():
        raise InputError("gpu: name a catalog device, e.g. --gpu 4090 or --gpu 2x3090")
    devs = parse_device_spec(gpu)
    if any(d.id != devs[0].id for d in devs):
        raise InputError(f"gpu: name one kind of device ('{gpu}' mixes {', '.join(sorted({d.id for d in devs}))})")
    return devs[0], len(devs)
