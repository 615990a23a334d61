"""llama.cpp / llama-server: what it allocates on each device.

Rules follow llama.cpp's own code (ggml-org/llama.cpp; measured against the commit llama-cpp-python
0.3.36 vendors, 0c1e57098, in measurements/llamacpp — benchmarks/accuracy.py prints the comparison):
- context (src/llama-context.cpp, llama_context ctor): llama-server's -c is the total over the slots;
  a unified cache (--kv-unified) is one stream of pad(n_ctx, 256) cells, otherwise each of the
  n_seq_max sequences gets a stream of pad(n_ctx / n_seq_max, 256) cells. n_batch ≤ n_ctx, n_ubatch ≤ n_batch.
- KV (src/llama-kv-cache.cpp): one K row of n_embd_k_gqa and one V row of n_embd_v_gqa per layer per
  cell, in the cache type; MLA stores the latent only (V is a view of it). Sliding-window layers keep
  min(n_ctx_seq, pad(n_swa × seqs + n_ubatch, 256)) cells per stream, seqs = n_seq_max in a unified
  stream, else 1, and the full n_ctx_seq with --swa-full (src/llama-kv-cache-iswa.cpp). Recurrent layers
  a constant f32 conv + ssm state per sequence (src/llama-memory-recurrent.cpp). ggml-cuda pads
  quantized rows to 512 elements. llama_init_from_model refuses a quantized V cache without flash
  attention, and different K/V types for MLA.
- offload (src/llama-model.cpp load_tensors): the last n_gpu_layers slots of n_layer + 1 (the output
  layer is slot n_layer) go to the GPUs, split by --tensor-split (default: free memory per device,
  upper_bound over the cumulative shares); the token embedding stays on the CPU; tied embeddings are
  loaded again for a GPU output layer. KV and recurrent state live with their layer.
- defaults of the current llama-server (common/common.h, common/arg.cpp): -c 0 = the trained context,
  -np auto (tools/server/server.cpp: 4 slots sharing one unified KV stream of -c cells, so runlocal's --ctx, the
  longest request, is the whole -c; an explicit --parallel N is N slots with -c = ctx × N; slots()), -ngl auto,
  --fit on (common/fit.cpp: an unset context, then unset layers, are cut until every device keeps 1 GiB free;
  LlamaCpp.fit), -b 2048, -ub 512, flash attention auto.
- compute buffers (src/llama-context.cpp graph_reserve): for an architecture runtimes/ggml/ builds,
  CPU-only or on one GPU with any -ngl, the reserved graph is traced, split as ggml-backend's scheduler
  splits it and placed by a re-implementation of ggml-alloc (exact to 0.01 MiB on every record of
  measurements/llamacpp); otherwise (several GPUs, tensor overrides, other architectures) the heaviest
  phase of the graph, with phase sizes fitted to the buffers llama.cpp logs; the graph inputs (the
  embedding rows, KQ masks, KV store indices) sit in the host's buffer when layers run on a GPU.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from copy import copy
from dataclasses import replace
from functools import cache

from ..errors import InputError
from ..kv import normalize_cache_type
from ..memo import IdMemo
from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from ..units import MiB
from .base import (
    GGUF_LEVERS,
    PARALLEL_AUTO,
    Allocation,
    DeviceMemory,
    Settings,
    Step,
    Target,
)
from .llamacpp_compute import (  # noqa: F401  (re-exported: the planner's pieces, as tests and benchmarks import them)
    PREFIX_EXACT,
    ComputeSizing,
    compute_phases,
    fa_f16_copies,
    ffn_width,
    ffn_width_now,
    graph_prefix,
    graph_prefix_now,
    host_compute,
    kq_masks,
    kv_store_indices,
    many_contexts,
    simulate_now,
    simulated_compute,
    size_compute,
)
from .llamacpp_explain import GDN_WORDS, buffer_steps
from .llamacpp_fit import (  # noqa: F401  (re-exported: Ollama and the tests import them from here)
    _LAYER_OUTCOMES,
    FitProbes,
    FitSettled,
    LaunchView,
    LayerOutcomes,
    fit_answer,
    fit_layers,
    fit_overflows_host,
    gpu_side,
    with_estimate_short,
)
from .llamacpp_fit_bound import every_layer_surely_moved
from .llamacpp_fit_devices import ALL_EXPERTS, Layers, Overflow, describe, fit_devices, fit_flags, rule_layers
from .llamacpp_kv_words import kv_cache_step, kv_inputs_step, recurrent_step, swa_cells_step  # noqa: F401
from .llamacpp_layout import (  # noqa: F401
    AUTO_SLOTS,
    CTX_PAD,
    DEFAULT_BATCH,
    DEFAULT_CTX,
    DEFAULT_UBATCH,
    FIT_MARGIN,
    FIT_MIN_CTX,
    GPU_CONTEXT_OVERHEAD,
    HOST_WEIGHTS_LOADED,
    HOST_WEIGHTS_MMAP,
    MATRIX_ROW_PADDING,
    NGL_ALL,
    NGL_AUTO,
    Budget,
    Context,
    DeviceBuffers,
    Pools,
    _split,
    backend_rules,
    buffer_device,
    context_sizes,
    kv_per_token,
    layer_devices,
    layer_devices_kept,
    mla_cache_step,
    mla_head_widths,
    pad,
    parse_tensor_overrides,
    place_pools,
    slots,
    swa_cells,
)
from .llamacpp_mmproj import no_mmproj_words, place_hf_projector
from .llamacpp_nohost import host_repack
from .llamacpp_placed import layer_shares
from .llamacpp_swa import as_llamacpp_loads, window_step
from .mla_flash import mla_flash_blocked

_BUFFERS = IdMemo(2048)
_ALLOCATIONS = IdMemo(2048)
_FLOORS = IdMemo(4096)
_FITS = IdMemo(2048)
_HOST_OVER = IdMemo(2048)     # _fit_overflows_host's rooms where it found the host surely over


def _not_kept() -> dict[str, float]:
    raise KeyError("not kept")     # IdMemo.get stores nothing when make() raises


def kv_split(p: Pools, c: Context) -> tuple[int, int] | None:
    """(KV bytes per token of the layers holding the whole context, the window layers' KV bytes), where a
    sliding-window layer holds fewer cells than the context; None otherwise."""
    windowed = [(per, cells) for w, _, per, cells in p.kv_groups if w is not None and cells < c.n_ctx_seq]
    if not windowed:
        return None
    full = sum(per for w, _, per, cells in p.kv_groups if w is None or cells >= c.n_ctx_seq)
    return full, sum(per * cells for per, cells in windowed) * c.n_stream


def _layers(n: int) -> str:
    return f"{n} layer" if n == 1 else f"{n} layers"


def _held_in_ram(rules) -> str:
    """What fit.cpp's CPU rules hold in RAM, in words: a MOE rule (…_exps) only a layer's routed experts; a fraction
    rule (ffn_(gate|gate_up|down).*, ffn_down.*: llamacpp_fit_devices.FRACTION_TENSORS) that part of every
    feed-forward projection of the layer, its dense and shared ones too."""
    experts = rule_layers([r for r in rules if "exps" in r[0]], "CPU")
    partial = rule_layers([r for r in rules if "exps" not in r[0]], "CPU")
    words = [f"the experts of {_layers(len(experts))}"] if experts else []
    words += [f"part of the feed-forward weights of {_layers(len(partial))}"] if partial else []
    return " and ".join(words)


class LlamaCpp:
    name = "llama.cpp"
    pools_kv = False
    levers = GGUF_LEVERS

    def __init__(self, simulate_graph: bool = True, output_cap: bool = True) -> None:
        # False: size every compute buffer with the fitted phase formula (benchmarks/compute_sim.py compares both)
        self.simulate_graph = simulate_graph
        # False: the C API's outputs (n_outputs_max = n_batch), as llama-cpp-python and builds before PR #23861 run
        self.output_cap = output_cap

    # the build's defaults (runtimes/versions.py llamacpp_rules): -np auto (PR #16736) and --fit (PR #16653)
    np_auto = True
    has_fit = True
    context_zero_is_trained = True  # -c 0: n_ctx_train (common/arg.cpp "0 = loaded from model"; check.build_settings)
    # False: a build before PR #23764 (b9410), whose KQ masks are f32 inputs cast to f16 for flash attention
    kq_mask_f16 = True
    # a build before b8301: qwen3next / qwen35 delta nets unfused ("unfused", "chunked": runtimes/versions.py llamacpp_gdn)
    gdn = "fused"
    # False: a build before PR #15434, which had no --flash-attn auto: flash attention off unless -fa was given
    fa_auto = True
    # what the build caches of an MLA layer (llamacpp_layout.MLA_CACHE_WORDS, runtimes/versions.py llamacpp_mla_cache):
    # "k" (PR #19067 on), "kv" (PR #12801 to #19067), "heads" (before PR #12801); the why is --explain's, set for a
    # named build only
    mla_cache = "k"
    mla_cache_why = ""
    # what a file decides before the build does: (model, quant) → (era, why), or None for the build's era (Ollama's
    # library blobs without key_length_mla: runtimes/published.py library_mla_cache)
    mla_file_rule: Callable[[ModelSpec, str | None], tuple[str, str] | None] | None = None
    # the build whose ggml kernels run (Ollama: its vendored or llama-server build); None: this planner's own build
    kernel_build: int | None = None
    # --backend (runtimes/backends.py); None: from the GPU's vendor
    backend: str | None = None

    def _as_build_reads(self, s: Settings) -> Settings:
        """Settings as an older build reads them: no -np auto (one slot), no --fit, no flash attention unless asked."""
        if not self.np_auto and s.parallel == PARALLEL_AUTO:
            s = s.with_(parallel=1)
        if not self.has_fit and s.llamacpp.fit:
            s = s.with_(fit=False)
        if not self.fa_auto and s.llamacpp.flash_attn == "auto":
            s = s.with_(flash_attn="off")       # flash attention not asked for: that build's default, off
        return s

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        has_gpu = any(t.kind != "cpu" for t in targets)
        ngl = settings.llamacpp.n_gpu_layers
        if ngl is None or ngl < 0:
            ngl = model.n_layers + 1 if has_gpu else 0
        return settings.with_(
            ctx=settings.ctx or self.auto_ctx(model, settings),
            batch=settings.llamacpp.batch or DEFAULT_BATCH,
            ubatch=min(settings.llamacpp.ubatch or DEFAULT_UBATCH, settings.llamacpp.batch or DEFAULT_BATCH),
            n_gpu_layers=ngl if has_gpu else 0,
            cache_type_k=normalize_cache_type(settings.cache_type_k, field="cache-type-k"),
            cache_type_v=normalize_cache_type(settings.cache_type_v, field="cache-type-v"),
        )

    @staticmethod
    def auto_ctx(model: ModelSpec, s: Settings, n_ctx_total: int | None = None) -> int:
        """Context per sequence for -c 0 (the default): llama_context uses the trained context for all of a
        unified cache (-np auto's included), and common/fit.cpp gives each of n_seq_max separate streams the
        trained context."""
        n_seq, unified, k = slots(s)
        streams = 1 if unified else n_seq
        total = n_ctx_total if n_ctx_total is not None else (model.max_position_embeddings or DEFAULT_CTX) * streams
        return max(1, total // k)

    def fit(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
            targets: list[Target]) -> tuple[Settings, list[Step]]:
        """llama-server --fit (on by default, common/fit.cpp common_params_fit_impl): the context and -ngl the
        user left unset are chosen so every device keeps FIT_MARGIN free. Step 1: the trained context and every
        layer; if a device is short, step 2 shortens an unset context, interpolating linearly between
        FIT_MIN_CTX and the trained context on the summed use and rounding down to 256 × streams (one device:
        done); step 3–4 fit the layers when -ngl is unset (fit_layers)."""
        gpus = [t for t in targets if t.kind != "cpu"]
        ctx_auto = settings.ctx is None
        ngl_auto = settings.llamacpp.n_gpu_layers is None or settings.llamacpp.n_gpu_layers == NGL_AUTO
        # only devices with memory of their own are fitted: with none (a CPU-only run) fit.cpp returns at once,
        # "llama_params_fit_impl: no devices with dedicated memory found" (src/llama.cpp, nd == 0), so -c 0 keeps
        # the trained context
        devices = gpus
        if not settings.llamacpp.fit or not (ctx_auto or ngl_auto) or not devices:
            return settings, []
        n_seq, unified, _ = slots(settings)
        streams = 1 if unified else n_seq
        trained = model.max_position_embeddings or DEFAULT_CTX
        n_max, n_min = trained * streams, FIT_MIN_CTX * streams
        s = settings.with_(ctx=settings.ctx or self.auto_ctx(model, settings, n_max))
        if ngl_auto:
            s = s.with_(n_gpu_layers=model.n_layers + 1)
        def used(st: Settings) -> list[int]:
            return self._gpu_use(model, weights, st, targets)

        free = [t.capacity - FIT_MARGIN for t in devices]

        def floors(st: Settings) -> list[int]:     # each GPU's bytes without compute buffers: at most its use
            return self.floor(model, weights, st, targets)[:len(devices)]
        # several GPUs, -c given: not planned where every layer surely leaves a GPU past its margin (llamacpp_fit_bound)
        moved = not ctx_auto and len(devices) > 1 and every_layer_surely_moved(self, model, weights, settings, targets)
        first = None if moved or any(f > room for f, room in zip(floors(s), free)) else used(s)  # where it may fit
        steps: list[Step] = []
        if first is not None and all(u <= f for u, f in zip(first, free)):
            if ctx_auto:
                steps.append(Step("context (-c 0, --fit)", f"the trained context {trained:,}"
                                  + (f" × {streams} streams" if streams > 1 else "") + " leaves "
                                  f"{FIT_MARGIN // MiB} MiB free on every device", f"{s.ctx:,} per sequence",
                                  "llama.cpp common/fit.cpp common_params_fit_impl, common/common.h"))
            return s, steps
        if ctx_auto and n_max > n_min:
            lo = s.with_(ctx=self.auto_ctx(model, settings, n_min))
            target = sum(free)
            if len(devices) > 1:
                # several GPUs: only whole layers go to a device; fit.cpp books half a layer per device more
                # (a sixth of one for MoE, whose tensors move one by one); the weights' bytes need no compute buffers
                bufs = self.buffers_now(as_llamacpp_loads(model), weights, self._as_build_reads(s), targets, False)[1]
                per_layer = sum(b.model for b in bufs if b.kind != "cpu") // max(1, min(s.llamacpp.n_gpu_layers or 1,
                                                                                        model.n_layers))
                target -= (len(devices) + 1) * per_layer // (6 if model.n_experts else 2)
            # the minimum context's floors (at most its use) already at the target: neither end's use is needed
            used_min = None if sum(floors(lo)) >= target else sum(used(lo))
            if used_min is not None and target > used_min:
                used_max = sum(first if first is not None else used(s))
                n_ctx = n_min + (n_max - n_min) * (target - used_min) // max(1, used_max - used_min)
                align = CTX_PAD * streams
                n_ctx = max(n_ctx - n_ctx % align, n_min)
                s = s.with_(ctx=self.auto_ctx(model, settings, n_ctx))
                steps.append(Step("context (-c 0, --fit)",
                                  f"trained {trained:,} does not leave {FIT_MARGIN // MiB} MiB free: "
                                  f"{n_min:,} + ({n_max:,} − {n_min:,}) × (target − use at {n_min:,}) / "
                                  f"(use at {n_max:,} − use at {n_min:,}), rounded down to {align}",
                                  f"{s.ctx:,} per sequence", "llama.cpp common/fit.cpp common_params_fit_impl step 2"))
                if len(devices) <= 1:
                    return s, steps
            else:
                s = lo
                steps.append(Step("context (-c 0, --fit)", f"even {n_min:,} cells do not leave "
                                  f"{FIT_MARGIN // MiB} MiB free: the minimum", f"{s.ctx:,} per sequence",
                                  "llama.cpp common/fit.cpp common_params_fit_impl step 2"))
        if not gpus or not ngl_auto or s.llamacpp.n_cpu_moe or s.llamacpp.override_tensor or s.llamacpp.tensor_split:
            # fit.cpp leaves the layers alone when -ngl, -ts or tensor overrides (-ot, --n-cpu-moe) are the user's
            return s, steps
        if len(gpus) > 1:
            s, layers = self._fit_devices(model, weights, s, targets, free, used)
        else:
            s, layers = self._fit_layers(model, weights, s, targets, free, used)
        return s, [*steps, layers]

    def _fit_devices(self, model: ModelSpec, weights: WeightEstimate, s: Settings, targets: list[Target],
                     free: list[int], used: Callable[[Settings], list[int]]) -> tuple[Settings, Step]:
        """--fit steps 3–4 on several GPUs (llamacpp_fit_devices.fit_devices): each GPU's layers, back to front, and
        for MoE which layers keep their experts in system memory, written as fit.cpp writes them (-ngl, -ts, -ot)."""
        gpus = [t for t in targets if t.kind != "cpu"]
        n, moe = model.n_layers, bool(model.n_experts)
        prefix = {"cuda": "CUDA", "rocm": "ROCm", "vulkan": "Vulkan", "sycl": "SYCL"}.get(
            backend_rules(self.backend, targets).name, "CUDA")

        def buffer_name(dev: int | None) -> str:
            return "CPU" if dev is None else f"{prefix}{dev}"

        def placed(layers: Layers, over: Overflow) -> Settings:
            ngl, split, rules = fit_flags(n, layers, over, buffer_name)
            return s.with_(n_gpu_layers=ngl, tensor_split=split, override_tensor=rules, n_cpu_moe=0)

        dense_fits = False
        with many_contexts():   # graphs built with n_kv a symbol: the max-context search asks these placements again
            if moe:     # fit.cpp's probe with every expert in system memory (the default split): dense tensors fit?
                all_out = used(s.with_(override_tensor=((ALL_EXPERTS, "CPU"),), n_cpu_moe=0))
                dense_fits = sum(f - u for f, u in zip(free, all_out)) > 0
            layers, over = fit_devices(n, len(gpus), moe, lambda ls, ov: used(placed(ls, ov)), free, dense_fits,
                                       lambda ls, ov: self.floor(model, weights, placed(ls, ov), targets)[:len(gpus)])
        s = placed(layers, over)
        return s, Step("layers (--fit)", f"fit.cpp's fill of {len(gpus)} GPUs, back to front"
                       + (", then the experts front to back" if moe and dense_fits else "")
                       + f", each keeping {FIT_MARGIN // MiB} MiB free; each probe's use per GPU is runlocal's plan of "
                       "that launch (fit.cpp measures it with a load that allocates nothing)",
                       describe(n, layers, over, [g.name for g in gpus], moe)
                       + f" → -ngl {s.llamacpp.n_gpu_layers} -ts "
                       + ",".join(f"{x:g}" for x in s.llamacpp.tensor_split)
                       + (f", {len(s.llamacpp.override_tensor)} -ot rule(s)" if s.llamacpp.override_tensor else ""),
                       "llama.cpp common/fit.cpp common_params_fit_impl steps 3–4, set_ngl_tensor_split_tbo (08033df)")

    def _fit_layers(self, model: ModelSpec, weights: WeightEstimate, s: Settings, targets: list[Target],
                    free: list[int], used: Callable[[Settings], list[int]]) -> tuple[Settings, Step]:
        """--fit steps 3–4 (fit_layers): the most layers, and for MoE the fewest layers' experts in system memory,
        that leave every GPU its margin; used(settings) gives each GPU's use."""
        gpus = [t for t in targets if t.kind != "cpu"]
        ngl, ncmoe = fit_answer(model, self._fit_probes(model, weights, s, targets, free, used))
        s = s.with_(n_gpu_layers=ngl, n_cpu_moe=max(ncmoe, s.llamacpp.n_cpu_moe))
        blocks = model.n_layers if ngl > model.n_layers else max(0, ngl - 1)
        return s, Step("layers (--fit)", f"largest offload that leaves {FIT_MARGIN // MiB} MiB free on "
                       + ", ".join(g.name for g in gpus) + (f"; experts of {ncmoe} layers in system memory" if ncmoe else ""),
                       f"-ngl {ngl}: {blocks}/{model.n_layers} repeating layers on the GPU"
                       + (f", --n-cpu-moe {ncmoe}" if ncmoe else ""),
                       "llama.cpp common/fit.cpp common_params_fit_impl steps 3–4")

    def _fit_probes(self, model: ModelSpec, weights: WeightEstimate, s: Settings, targets: list[Target],
                    free: list[int], used: Callable[[Settings], list[int]]) -> FitProbes:
        """The probes of --fit's layer search from ``s`` (fit_layers): what _fit_layers searches with and
        surely_over asks first."""
        gpus = [t for t in targets if t.kind != "cpu"]

        def run(ngl: int, ncmoe: int) -> list[int]:
            return used(s.with_(n_gpu_layers=ngl, n_cpu_moe=ncmoe))

        # one GPU (several: _fit_devices)
        def hopeless(ngl: int, ncmoe: int) -> int:
            floors = self.floor(model, weights, s.with_(n_gpu_layers=ngl, n_cpu_moe=ncmoe), targets)
            return min(room - f for f, room in zip(floors[:len(gpus)], free))

        return FitProbes(model, run, lambda us: all(u <= f for u, f in zip(us, free)), hopeless,
                         self._layer_outcomes(model, weights, s, targets) if len(gpus) == 1 else None,
                         lambda us: min(f - u for u, f in zip(us, free)))

    def _gpu_use(self, model: ModelSpec, weights: WeightEstimate, st: Settings, targets: list[Target]) -> list[int]:
        """Each GPU's use as --fit measures it: its buffers and the backend's context."""
        overhead = backend_rules(self.backend, targets).gpu_context
        return [b.total + overhead for b in self._kept_buffers(model, weights, st, targets)[1] if b.kind != "cpu"]

    def _fit_overflows_host(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                            targets: list[Target]) -> bool:
        """--fit places the layers of a set context on one GPU (a fix asking for a longer context): whatever it
        answers leaves the host over its RAM, known before the search ends (Ollama._fit_overflows_host says how)."""
        key = self._key(weights, settings, targets)
        if _HOST_OVER.has(model, key):
            return True
        gpus = [t for t in targets if t.kind != "cpu"]
        host = next((t for t in targets if t.kind == "cpu"), None)
        loads, settings = as_llamacpp_loads(model), self._as_build_reads(settings)
        ls = settings.llamacpp
        if (len(gpus) != 1 or host is None or host.capacity <= 0 or settings.ctx is None or not ls.fit
                or ls.n_gpu_layers not in (None, NGL_AUTO) or ls.n_cpu_moe or ls.override_tensor or ls.tensor_split):
            return False
        s = settings.with_(n_gpu_layers=loads.n_layers + 1)
        probes = self._fit_probes(loads, weights, s, targets, [gpus[0].capacity - FIT_MARGIN],
                                  lambda st: self._gpu_use(loads, weights, st, targets))

        def on_host(ngl: int, ncmoe: int) -> int:
            return self.floor(loads, weights, s.with_(n_gpu_layers=ngl, n_cpu_moe=ncmoe), targets)[-1]

        past = fit_overflows_host(loads, probes, lambda g, m: on_host(g, m) > host.capacity)
        if past is None:
            return False
        # kept for room_when_over: the host's room at the first placement left (its bytes without compute buffers).
        # Only a "surely over" is kept: a search that ended without settling it may settle it later from its answer
        _HOST_OVER.get(model, key, lambda: {host.name: host.capacity - on_host(*probes.order()[past])})
        return True

    @staticmethod
    def kept_free(settings: Settings, targets: list[Target], *, held: bool = False) -> dict[str, int]:
        """Bytes each device keeps free by design (search.fits_room takes them off its room; Ollama.kept_free is the
        same hook): where the layers are ``held`` where --fit placed them all on the GPUs (plan.make_plan's longest
        context where --fit moved nothing), --fit's margin on every GPU, which must stay free — past it, --fit would
        move layers to the host. Nothing otherwise: where --fit places the layers at each context tried, the host's
        room decides (room_when_over)."""
        if not held or not settings.llamacpp.fit:
            return {}
        return {t.name: FIT_MARGIN for t in targets if t.kind != "cpu"}

    def room_when_over(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                       targets: list[Target]) -> dict[str, float] | None:
        """A guess of the room of a plan surely_over skipped because whatever --fit answers leaves the host over its
        RAM (_fit_overflows_host): the host's room at the placement most on the GPU that --fit can still answer, less
        nothing for its compute buffer (below zero, and growing with the context as --fit moves layers to the host,
        where the floor with every layer on the GPU that search.fits_room would guess from puts the host's room near
        its whole RAM and the GPU hundreds of GB over). None otherwise: fits_room guesses from floor(). Only guides a
        search: the verdicts decide."""
        try:    # (looked up without storing anything: a stored entry means "surely over" to _fit_overflows_host)
            return _HOST_OVER.get(model, self._key(weights, settings, targets), _not_kept)
        except KeyError:
            return None

    def context_guide(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                      targets: list[Target]) -> Callable[[int, list[Target]], tuple[DeviceMemory, ...]] | None:
        """A cheap guess of the plan at a context, for search.longest_context where --fit places the layers over
        several GPUs at each context (a whole --fit: some twenty compute-graph simulations, 1–2 s): the same --fit,
        its probes sized with the fitted compute phases instead of the traced graph (simulate_graph False: no
        simulation), so the guess steps where --fit moves layers as the plan does; its devices, in the plan's order
        (the GPUs sit near --fit's margin at every context; the host's room falls in steps, a layer's experts each).
        Asked on the targets given (the search shrinks each GPU by the compute buffer the sketch missed there at a
        plan made whole, so the sketch moves layers where the plan does). Only guides: the whole plans decide.
        None where --fit does not place the layers over several GPUs or the host's RAM is not known."""
        gpus = [t for t in targets if t.kind != "cpu"]
        host = next((t for t in targets if t.kind == "cpu"), None)
        ls = settings.llamacpp
        if (len(gpus) < 2 or host is None or host.capacity <= 0 or not ls.fit or ls.n_gpu_layers not in (None, NGL_AUTO)
                or ls.n_cpu_moe or ls.override_tensor or ls.tensor_split):
            return None
        sketch = copy(self)
        sketch.simulate_graph = False

        def devices(ctx: int, on: list[Target]) -> tuple[DeviceMemory, ...]:
            return sketch.allocate(model, weights, settings.with_(ctx=ctx), on).devices
        return devices

    def _layer_outcomes(self, model: ModelSpec, weights: WeightEstimate, s: Settings,
                        targets: list[Target]) -> LaunchView | None:
        """fit_layers' store of answers at other contexts and slot counts of this launch (LayerOutcomes); -np auto's
        shared stream and a context too short for a whole batch (the batch then shrinks with it) are kept apart."""
        assert s.ctx is not None
        slots_n = s.parallel if s.parallel >= 1 else 0
        if s.ctx * max(1, slots_n) < (s.llamacpp.batch or DEFAULT_BATCH):
            return None
        launch = ("llama.cpp --fit", self._key(weights, s.with_(ctx=None, n_gpu_layers=None, n_cpu_moe=0,
                                                                 parallel=s.parallel if slots_n == 0 else 1),
                                               list(gpu_side(targets))))
        return LayerOutcomes.at(model, launch, s.ctx, slots_n)

    @staticmethod
    def _compromise(model: ModelSpec, asked: Settings, s: Settings, has_gpu: bool = True) -> str | None:
        """What --fit gave up, in words (None: the trained context and every layer on the GPUs)."""
        parts = []
        trained = model.max_position_embeddings or DEFAULT_CTX
        if asked.ctx is None and (s.ctx or 0) < LlamaCpp.auto_ctx(model, asked):
            parts.append(f"the context shortened from the trained {trained:,} to {s.ctx:,}")
        if has_gpu and asked.llamacpp.n_gpu_layers in (None, NGL_AUTO) and (s.llamacpp.n_gpu_layers or 0) <= model.n_layers:
            parts.append(f"{model.n_layers + 1 - (s.llamacpp.n_gpu_layers or 0)} of {model.n_layers + 1} layers in system memory")
        if s.llamacpp.n_cpu_moe > asked.llamacpp.n_cpu_moe:
            parts.append(f"the experts of {_layers(s.llamacpp.n_cpu_moe)} in system memory")
        held = rule_layers(s.llamacpp.override_tensor, "CPU") if not asked.llamacpp.override_tensor else []
        if held:      # fit.cpp's -ot on several GPUs (rules between the GPUs alone give nothing up)
            parts.append(_held_in_ram(s.llamacpp.override_tensor) + " in system memory, split its own way over the "
                         "GPUs (-ts " + ",".join(f"{x:g}" for x in s.llamacpp.tensor_split) + ")")
        if not parts:
            return None
        slower = any("system memory" in p for p in parts)
        return ("llama-server --fit (on by default) chose " + ", ".join(parts) + " to leave 1 GiB free on each device"
                + (": slower than all on the GPU (see speed and fixes)" if slower else ""))

    def flash_attention(self, settings: Settings, targets: list[Target]) -> bool:
        # flash_attn auto turns it on where the backend supports it (CUDA, Metal, CPU all do for
        # common head sizes); "off" keeps it off (a quantized V cache is then refused, see refusal()).
        return settings.llamacpp.flash_attn != "off"

    def flash_attention_switch(self) -> str:
        """The flag that turns flash attention on, as this build spells it: -fa before PR #15434, --flash-attn on
        from it (flag_spelling.FLASH_ATTN_VALUE_BUILDS)."""
        from .flag_spelling import flash_attn_args, llamacpp_build

        return " ".join(flash_attn_args("on", llamacpp_build(getattr(self, "version", None))))

    def refusal(self, model: ModelSpec, s: Settings, fa: bool) -> str | None:
        """llama_init_from_model's own refusals (src/llama-context.cpp), with its words (llamacpp_refusal.py)."""
        from .llamacpp_refusal import init_refusal

        return init_refusal(model, s, fa)

    def _key(self, weights: WeightEstimate, settings: Settings, targets: list[Target]) -> tuple:
        # buffers and allocate read of the weights only their format, total and whether they are the file's
        return (self.simulate_graph, self.backend, self.output_cap, self.kq_mask_f16, self.gdn, self.mla_cache,
                self.mla_cache_why, self.mla_file_rule, weights.quant, weights.total, weights.from_file, settings, tuple(targets))

    def buffers(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                targets: list[Target]) -> tuple[Settings, list[DeviceBuffers], list[Step], dict]:
        """Every buffer llama.cpp logs, per device: the GPUs in order, then the host ("CPU"). Kept per model and
        settings (--fit, Ollama's and the fixes' searches ask again); each call gets its own copies."""
        s, bufs, steps, info = self._kept_buffers(model, weights, settings, targets)
        return s, [replace(b) for b in bufs], list(steps()), dict(info)

    def _kept_buffers(self, model: ModelSpec, weights: WeightEstimate, settings: Settings, targets: list[Target]
                      ) -> tuple[Settings, list[DeviceBuffers], Callable[[], list[Step]], dict]:
        """buffers() as kept (not copied: read them only), its steps made where first read: --fit's probes
        (_gpu_use) read the bytes alone, and most plans of a search are probes."""
        model, settings = as_llamacpp_loads(model), self._as_build_reads(settings)
        return _BUFFERS.get(model, self._key(weights, settings, targets),
                            lambda: self._buffers_later_steps(model, weights, settings, targets))

    def floor(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
              targets: list[Target]) -> list[int]:
        """Each device's bytes without its compute buffer (GPUs in order, then the host), the GPU context counted
        where anything is on it: a lower bound of the totals of buffers() / allocate() for the same settings
        (compute buffers are never negative), known without tracing the graph. A search skips a plan whose
        floor alone overflows a device: its verdict could only be the same."""
        def now() -> list[int]:
            _, bufs, _, _ = self.buffers_now(model, weights, settings, targets, with_compute=False)
            # the backend's GPU context, as allocate_now counts it (none for Vulkan, SYCL: backends.py)
            overhead = backend_rules(self.backend, targets).gpu_context
            return [b.total + (overhead if b.kind != "cpu" and b.total else 0) for b in bufs]
        return _FLOORS.get(model, self._key(weights, settings, targets), now)

    def surely_over(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                    targets: list[Target], *, gpus_only: bool = False) -> bool:
        """allocate() would overflow a device (a GPU, with gpus_only): known from floor() where --fit leaves these
        settings alone."""
        fit_idle = not settings.llamacpp.fit or (settings.ctx is not None and settings.llamacpp.n_gpu_layers is not None
                                        and settings.llamacpp.n_gpu_layers != NGL_AUTO)
        if not fit_idle:
            return not gpus_only and self._fit_overflows_host(model, weights, settings, targets)
        caps = [t.capacity for t in targets if t.kind != "cpu"]
        caps.append(0 if gpus_only else next((t.capacity for t in targets if t.kind == "cpu"), 0))
        return any(cap > 0 and f > cap for f, cap in zip(self.floor(model, weights, settings, targets), caps))

    def buffers_now(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                    targets: list[Target], with_compute: bool = True) -> tuple[Settings, list[DeviceBuffers], list[Step], dict]:
        """buffers() made: the launch (budget), the weights, KV and recurrent state per device (pools), the compute
        and output buffers (compute), then the steps that explain them. with_compute=False: floor()'s bytes, no steps."""
        s, bufs, steps, info = self._buffers_later_steps(model, weights, settings, targets, with_compute)
        return s, bufs, steps(), info

    def _buffers_later_steps(self, model: ModelSpec, weights: WeightEstimate, settings: Settings, targets: list[Target],
                             with_compute: bool = True) -> tuple[Settings, list[DeviceBuffers], Callable[[], list[Step]], dict]:
        """buffers_now with its steps made once, where first asked for (explain reads the buffers, final by then)."""
        b = self.budget(model, settings, targets, weights.quant)
        gpus = [t for t in targets if t.kind != "cpu"]
        host_t = next((t for t in targets if t.kind == "cpu"), None) or Target("CPU", "cpu", 0)
        p = place_pools(model, weights, b, gpus, host_t)
        if not with_compute:      # floor(): everything but the compute buffers (floor reads no steps)
            p.host.output = model.vocab_size * 4 * b.n_seq
            return b.settings, p.all, list, {"fa": b.flash_attn, "context": b.context}
        sizing = size_compute(model, weights, b, p, self.simulate_graph, tuple(g.kind for g in gpus),
                              self.n_outputs_max(b), kq_mask_f32=not self.kq_mask_f16, gdn=self.gdn)
        repack = host_repack(model, weights, b) if settings.llamacpp.no_host and p.devs and sizing is not None else None
        steps = cache(lambda: [b.backend.step(), *self.explain(model, weights, b, p, sizing, repack)])
        return b.settings, p.all, steps, {"fa": b.flash_attn, "context": b.context, "gpu_context": b.backend.gpu_context,
                                          "repack": repack, "kv_split": kv_split(p, b.context)}

    def n_outputs_max(self, b: Budget) -> int | None:
        """llama-server's cparams.n_outputs_max since PR #23861: tools/server/server-context.cpp
        server_n_outputs_max = max(1, min(n_batch, n_parallel × (1 + speculative n_max))); no draft model is planned
        (n_max 0), so n_parallel — -np auto is 4 by then (tools/server/server.cpp main resolves it before the model
        loads). None: no cap (the C API's n_batch, builds before the PR)."""
        return max(1, min(b.context.n_batch, b.n_seq)) if self.output_cap else None

    def budget(self, model: ModelSpec, settings: Settings, targets: list[Target], quant: str | None = None) -> Budget:
        """The launch before any byte is counted: defaults, context cells, slots, and each layer's device."""
        s = self.defaults(model, settings, targets)
        assert s.ctx is not None and s.llamacpp.batch is not None and s.llamacpp.ubatch is not None   # defaults() sets them
        gpus = [t for t in targets if t.kind != "cpu"]
        n_seq, unified, k = slots(s)
        c = context_sizes(s.ctx, n_seq, s.llamacpp.batch, s.llamacpp.ubatch, unified, total=s.ctx * k)
        ngl = (s.llamacpp.n_gpu_layers or 0) if gpus else 0
        if s.llamacpp.tensor_split and len(s.llamacpp.tensor_split) > len(gpus):
            raise InputError(f"tensor-split: {len(s.llamacpp.tensor_split)} shares given for {len(gpus)} GPU(s)")
        shares = layer_shares(s, gpus)
        return Budget(s, c, self.flash_attention(s, targets), backend_rules(self.backend, targets), n_seq, k, ngl,
                      layer_devices_kept(model.n_layers, ngl, tuple(shares)), mla_cache=self.mla_era(model, quant or s.quant)[0])

    def flash_blocked(self, model: ModelSpec, quant: str | None, targets: list[Target]) -> str | None:
        """Why this build cannot run flash attention on the GPU for the model's MLA cache (K ≠ V rows), or None
        (runtimes/mla_flash.py): fixes offer neither flash attention nor a quantized V cache there."""
        from .flag_spelling import llamacpp_build, no_flash_attn
        from .published import gpu_compute_capability

        if (before_flash := no_flash_attn(llamacpp_build(getattr(self, "version", None)))) is not None:
            return before_flash
        mla = next((a for a in model.attention_layers if a.kind == "mla"), None)
        if mla is None:
            return None
        era = self.mla_era(model, quant)[0]
        heads = mla_head_widths(model) if era == "heads" else None
        cached = (heads[1], heads[2]) if heads else (mla.k_dim, mla.v_dim)
        build = self.kernel_build if self.kernel_build is not None else llamacpp_build(getattr(self, "version", None))
        ccs = [float(c) if (c := gpu_compute_capability(g.name)) else None for g in targets if g.kind != "cpu"]
        return mla_flash_blocked(cached, build, backend_rules(self.backend, targets).name, ccs)

    def mla_era(self, model: ModelSpec, quant: str | None) -> tuple[str, str]:
        """What this launch caches of an MLA layer and why (MLA_CACHE_WORDS): the file's rule where it has one, else
        the build's (runtimes/versions.py llamacpp_mla_cache)."""
        if self.mla_file_rule is not None and (by_file := self.mla_file_rule(model, quant)) is not None:
            return by_file
        return self.mla_cache, self.mla_cache_why

    explain = staticmethod(buffer_steps)   # llamacpp_explain.py

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        """The plan of one llama-server launch; kept per model and settings (an Allocation is immutable)."""
        model = as_llamacpp_loads(model)   # the windows llama.cpp applies, not the config's
        settings = self._as_build_reads(settings)
        return _ALLOCATIONS.get(model, self._key(weights, settings, targets),
                                lambda: self.allocate_now(model, weights, settings, targets))

    def allocate_now(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                     targets: list[Target]) -> Allocation:
        asked = settings
        if any(t.kind != "cpu" for t in targets):     # --fit reads the GPUs only: kept for every host size
            fitted, kept = _FITS.get(model, self._key(weights, settings, list(gpu_side(targets))),
                                     lambda: (lambda r: (r[0], tuple(r[1])))(self.fit(model, weights, settings, targets)))
            settings, fit_steps = fitted, list(kept)
        else:
            settings, fit_steps = self.fit(model, weights, settings, targets)
        s, bufs, steps, info = self.buffers(model, weights, settings, targets)
        steps = [*fit_steps, *([w] if (w := window_step(model)) else []), *steps,
                 *self._build_steps(model, weights.quant, targets)]
        fa = info["fa"]
        c: Context = info["context"]
        devices: list[DeviceMemory] = []
        for b in bufs:
            if b.kind == "cpu":
                if b.capacity or b.total or len(bufs) == 1:
                    devices.append(DeviceMemory(b.name, "cpu", b.capacity, b.model, b.kv + b.rs, b.compute, b.output))
            else:
                # the backend's GPU context on any GPU with buffers, discrete or unified, as --fit counts it
                # (_gpu_use): on a Jetson it takes unified memory as a card's takes VRAM
                devices.append(DeviceMemory(b.name, b.kind, b.capacity, b.model, b.kv + b.rs, b.compute,  # type: ignore[arg-type]
                                            info["gpu_context"] if b.total else 0))
        compromise = with_estimate_short(self._compromise(model, asked, s, any(t.kind != "cpu" for t in targets))
                                         if fit_steps else None, devices, FIT_MARGIN)
        devices, steps = place_hf_projector(model, s, getattr(self, "version", None), devices, steps)  # after --fit
        per_token = kv_per_token(model, s.cache_type_k, s.cache_type_v, v_trans=not fa,
                                 mla_cache=self.mla_era(model, weights.quant)[0])
        return Allocation(
            settings=s, devices=tuple(devices), kv_bytes_per_token=per_token,
            kv_cache_tokens=None, max_concurrency=None, refusal=self.refusal(model, s, fa), steps=tuple(steps),
            compromise=compromise, host_repacked=info.get("repack"), kv_split=info.get("kv_split"),
            assumptions=(*([compromise] if compromise else []), f"flash attention {'on' if fa else 'off'}",
                         f"n_ubatch {c.n_ubatch}, n_batch {c.n_batch}",
                         HOST_WEIGHTS_MMAP if s.llamacpp.mmap else HOST_WEIGHTS_LOADED),
        )

    def _build_steps(self, model: ModelSpec, quant: str | None = None, targets: list[Target] | None = None) -> list[Step]:
        """What the speed model reads of a named build (hardware/speed.py planned_build, planned_gdn_path): the build
        (llama.cpp==bN) and, for a model with gated delta nets, the graph that build runs (runtimes/versions.py)."""
        from .flag_spelling import llamacpp_build

        out = []
        if (build := llamacpp_build(getattr(self, "version", None))) is not None:
            out.append(Step("llama.cpp build", "the release asked", f"b{build}", "runtimes/versions.py"))
        if self.gdn != "fused" and any(r.kind == "gated_deltanet" for r in model.recurrent_layers):
            out.append(Step("delta nets", GDN_WORDS.get(self.gdn, self.gdn), self.gdn, "runtimes/versions.py llamacpp_gdn"))
        era, why = self.mla_era(model, quant)
        if why and (mla := mla_cache_step(model, era, why)) is not None:
            out.append(mla)
        if targets and (blocked := self.flash_blocked(model, quant, targets)):
            out.append(Step("flash attention" + ("" if "PR #5021" in blocked else " (MLA)"), "no GPU kernel for this "
                            "cache: no flash-attention or quantized-V fix is offered", "unavailable", blocked))
        return out

    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        from . import flag_spelling as fs  # as the named build spells each option
        from .published import llama_server_model  # -m FILE, or -hf REPO:QUANT for a published GGUF

        _, _, k = slots(s)
        build = fs.llamacpp_build(getattr(self, "version", None))
        model_words, first = fs.model_args(llama_server_model(model, s.quant), build)
        parts = [fs.server_binary(build), *model_words, "-c", str((s.ctx or DEFAULT_CTX) * k)]
        if s.parallel != PARALLEL_AUTO:
            # without -np llama-server runs its auto 4 slots, so an explicit count is written, 1 included
            parts += ["--parallel", str(max(1, s.parallel))]
        if s.llamacpp.n_gpu_layers is not None:
            parts += ["-ngl", str(s.llamacpp.n_gpu_layers)]
        if s.cache_type_k != "f16":
            parts += ["--cache-type-k", s.cache_type_k]
        if s.cache_type_v != "f16":
            parts += ["--cache-type-v", s.cache_type_v]
        if s.llamacpp.flash_attn != "auto":
            parts += fs.flash_attn_args(s.llamacpp.flash_attn, build)
        # the plan's batch sizes where they are not llama-server's own defaults (common/common.h), so the command
        # pasted runs the compute buffers planned
        if (s.llamacpp.batch or DEFAULT_BATCH) != DEFAULT_BATCH:
            parts += ["-b", str(s.llamacpp.batch)]
        if (s.llamacpp.ubatch or DEFAULT_UBATCH) != DEFAULT_UBATCH:
            parts += ["-ub", str(s.llamacpp.ubatch)]
        # -ot before --cpu-moe / --n-cpu-moe: llama.cpp appends each to one list in command-line order and the first
        # match wins (PR #15077: "If you use --override-tensor before these options, your overrides will take
        # priority"), as the plan orders them (ggml/sched.py weight_devices)
        overrides = fs.has_override_tensor(build)
        if s.llamacpp.override_tensor and overrides:
            rules = ",".join(f"{p}={b}" for p, b in s.llamacpp.override_tensor)
            parts += ["-ot", shlex.quote(rules)]
        if s.llamacpp.n_cpu_moe and overrides:
            parts += fs.n_cpu_moe_args(s.llamacpp.n_cpu_moe, build,
                                    every_layer=s.llamacpp.cpu_moe and s.llamacpp.n_cpu_moe >= model.n_layers)
        parts += ["--kv-unified"] if s.llamacpp.kv_unified else []
        parts += ["--swa-full"] if s.llamacpp.swa_full else []
        if s.llamacpp.tensor_split:
            parts += ["--tensor-split", ",".join(f"{x:g}" for x in s.llamacpp.tensor_split)]
        if not s.llamacpp.mmap:
            parts += ["--no-mmap"]
        if not s.llamacpp.kv_offload:
            parts += ["--no-kv-offload"]
        parts += ["--no-host"] if s.llamacpp.no_host else []
        if not s.llamacpp.fit and self.has_fit:
            parts += ["--fit", "off"]
        parts += no_mmproj_words(model, s, build)
        return " ".join(parts) + fs.command_note(build, s.llamacpp, first)    # as the named build spells it, or said
