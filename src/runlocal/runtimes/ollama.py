"""Ollama: llama.cpp's memory, with Ollama's own choices of context, parallelism, batch and offload.

Modelled on ollama/ollama v0.33.0-rc2 (commit fb30760, Aug 2026; its launch code is v0.32.15's). Since v0.30.0 (commit 9db4bda,
"use llama-server exclusively for GGML models") Ollama launches an upstream ``llama-server``
(llm/llama_server.go startLlamaServer) with

    -c <num_ctx × num_parallel> -np <num_parallel> [--cache-type-k/-v T] --flash-attn on|off|auto
    [-b N -ub N] [-ngl N]

and leaves the layer placement to llama-server's ``--fit`` (llama.cpp common/fit.cpp), which keeps
a 1024 MiB margin free per device (common/common.h: ``fit_params_target``). So the bytes on each
device are llama.cpp's, computed by :class:`LlamaCpp`; this module decides the arguments Ollama
passes and the number of layers ``--fit`` offloads. On several GPUs Ollama gives llama-server one of them, or all
for ``--fit`` to spread the layers over (server/sched.go selectLlamaServerPlacement: runtimes/ollama_placement.py).

Rules, each cited where it is applied:
- default num_ctx: OLLAMA_CONTEXT_LENGTH, else by total VRAM (server/routes.go Serve, since v0.15.5):
  ≥ 47 GiB → 262144, ≥ 23 GiB → 32768, else 4096 (v0.6.7–v0.15.4: 4096; before v0.6.7: 2048);
  capped at the model's training context (llm/server.go NewLlamaServer).
- OLLAMA_NUM_PARALLEL (default 1, envconfig/config.go) multiplies the context; some architectures
  are forced to 1 (server/sched.go load).
- OLLAMA_KV_CACHE_TYPE sets K and V alike (llm/llama_server.go); a quantized V cache needs flash
  attention, which llama-server enforces (src/llama-context.cpp). Before v0.30 flash attention was off by default
  except for the architectures each release lists, and a quantized type without it ran f16 (runtimes/ollama_flash.py).
- batch: chosen from the context and predicted VRAM (server/sched.go automaticGenerationBatch).
- refusal text: "model requires more system memory (X) than is available (Y)" is Ollama's own check, worded
  alike in every release v0.2.2–v0.24 (none before v0.2.0, server/sched.go's own in v0.2.0–v0.2.1: ollama_early.py)
  from a function that moved (runtimes/versions.py OLLAMA_RAM_REFUSAL: llm/server.go
  NewLlamaServer, then llamaServer.Load / ollamaServer.createLayout, then verifyLayout); v0.30+ lets llama-server fail.
- a multimodal projector goes on the first GPU unless num_gpu is 0 or below the model's layers or a
  GPU has less than the projector + 1 GiB, and then --fit keeps that much free instead of 1 GiB
  (llm/llama_server.go appendMMProjArgs, shouldDisableMMProjOffload, mmprojFitTargetMiB). That is v0.31.2+; v0.30.0
  – v0.31.1 make the same check but --fit keeps its own 1024 MiB, and earlier releases put it on the first GPU
  whenever there is one (runtimes/versions.py ollama_projector_rule).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..kv import normalize_cache_type
from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from ..units import GiB, MiB
from .base import GGUF_LEVERS, Allocation, DeviceMemory, Settings, Step, Target
from .flag_spelling import ollama_service_note
from .llamacpp import (
    FIT_MARGIN,
    FitProbes,
    LayerOutcomes,
    LlamaCpp,
    fit_answer,
    fit_overflows_host,
    gpu_side,
)
from .llamacpp_layout import NGL_AUTO
from .llamacpp_swa import as_llamacpp_loads, loaded_arch
from .ollama_early import autoselect_words, ram_refusal
from .ollama_estimate import BATCH_BEFORE_V030, estimator_words, held_floor, release_batch, release_split
from .ollama_placement import llama_server_gpus
from .ollama_projector import (
    MMPROJ_HEADROOM,
    OLLAMA_REF,
    PROJECTOR_ROLES,
    Projector,
    place_projector,
    projector_bytes,
    projector_on_gpu,
)
from .ollama_runner import launch_words
from .ollama_sched import (
    BATCH_DEFAULT,
    BATCH_LARGE,
    BATCH_MEDIUM,
    automatic_batch,
    default_num_ctx,
    predicted_vram,
)
from .options import LlamaCppOptions

DEFAULT_NUM_PARALLEL = 1            # envconfig/config.go: NumParallel = Uint("OLLAMA_NUM_PARALLEL", 1)
# server/sched.go load: "Some architectures are not safe with num_parallel > 1".
SINGLE_SEQUENCE_FAMILIES = frozenset({
    "mllama", "qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe", "qwen3next", "lfm2", "lfm2moe",
    "nemotronh", "nemotronhmoe", "nemotronhomni",
})
# llama.cpp common/common.h: fit_params_target = 1024 MiB per device (llama-server's --fit is on by default).
# llama.cpp common/arg.cpp kv_cache_types: what --cache-type-k/-v accept (Ollama passes the env value through).
LLAMA_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")


def ngl_free(s: Settings) -> bool:
    """Whether num_gpu is left to Ollama (unset or -1), so llama-server's --fit places the layers."""
    return s.llamacpp.n_gpu_layers is None or s.llamacpp.n_gpu_layers < 0


def _quantized_kv(s: Settings) -> bool:
    return any(c not in ("f16", "bf16", "f32") for c in (s.cache_type_k, s.cache_type_v))


def from_environment(env: Mapping[str, str] | None = None) -> dict:
    """The `ollama serve` environment a planner needs beyond Settings, read like envconfig/config.go:
    OLLAMA_CONTEXT_LENGTH (tokens), OLLAMA_GPU_OVERHEAD (bytes), OLLAMA_SCHED_SPREAD; unset or unreadable → the
    default."""
    import os

    env = os.environ if env is None else env
    out: dict = {}
    ctx = env.get("OLLAMA_CONTEXT_LENGTH", "").strip()
    if ctx.isdigit() and int(ctx) > 0:
        out["context_length"] = int(ctx)
    overhead = env.get("OLLAMA_GPU_OVERHEAD", "").strip()
    if overhead.isdigit():
        out["gpu_overhead"] = int(overhead)
    if env.get("OLLAMA_SCHED_SPREAD", "").strip().lower() in ("1", "true", "t", "yes", "on"):   # envconfig.Bool
        out["sched_spread"] = True
    return out


def environment_settings(env: Mapping[str, str] | None = None) -> dict:
    """OLLAMA_NUM_PARALLEL, OLLAMA_KV_CACHE_TYPE and OLLAMA_FLASH_ATTENTION as CheckRequest fields."""
    import os

    env = os.environ if env is None else env
    out: dict = {}
    par = env.get("OLLAMA_NUM_PARALLEL", "").strip()
    if par.isdigit() and int(par) > 0:
        out["parallel"] = int(par)
    kv = env.get("OLLAMA_KV_CACHE_TYPE", "").strip().lower()
    if kv:
        out["kv_cache"] = kv
    fa = env.get("OLLAMA_FLASH_ATTENTION", "").strip().lower()
    if fa:   # envconfig.Bool: 1/true/… on, 0/false off
        out["flash_attn"] = "on" if fa in ("1", "true", "t", "yes", "on") else "off"
    return out


def _family_key(family: str) -> str:
    return re.sub(r"[^a-z0-9]", "", family.lower())


class _OnLlamaServer:
    """An attribute of the LlamaCpp planner an Ollama planner launches (``self._llama``), read and set there."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else getattr(obj._llama, self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(obj._llama, self.name, value)

class Ollama:
    """Ollama planner. Server environment that ``Settings`` does not carry is given here:
    ``context_length`` = OLLAMA_CONTEXT_LENGTH, ``gpu_overhead`` = OLLAMA_GPU_OVERHEAD (bytes), ``sched_spread`` =
    OLLAMA_SCHED_SPREAD, ``new_engine`` = OLLAMA_NEW_ENGINE."""

    name = "ollama"
    pools_kv = False
    levers = GGUF_LEVERS   # OLLAMA_KV_CACHE_TYPE, num_gpu, a smaller quant tag

    def __init__(self, *, context_length: int | None = None, gpu_overhead: int = 0, simulate_graph: bool = True,
                 sched_spread: bool = False, new_engine: bool = False):
        self.context_length = context_length
        self.gpu_overhead = gpu_overhead
        self.sched_spread = sched_spread      # OLLAMA_SCHED_SPREAD: every GPU to llama-server (ollama_placement.py)
        self.new_engine = new_engine          # OLLAMA_NEW_ENGINE=1: the Go engine before v0.30 (ollama_engine.py)
        # the llama-server Ollama launches, built from upstream llama.cpp (ollama/ollama#15122); the current release's
        # (v0.33.0-rc2's b10488, versions.OLLAMA_NEWEST_COMMIT_READ) has PR #23861's output cap, a named release by its build
        # (runtimes/versions.py ollama_rules)
        self._llama = LlamaCpp(simulate_graph=simulate_graph)
        from .published import library_mla_cache

        # the library's DeepSeek blobs lack key_length_mla: every head's K/V in every release
        self._llama.mla_file_rule = library_mla_cache

    # what the llama-server this release launches was built with, read and set on it (runtimes/__init__ sets them by
    # the release's build): llama-server's output cap (PR #23861); f16 KQ mask inputs (PR #23764; False: f32 and a
    # cast); its delta nets (versions.py llamacpp_gdn); what it caches of an MLA layer and why (versions.py
    # ollama_mla_cache)
    output_cap = _OnLlamaServer()
    kq_mask_f16 = _OnLlamaServer()
    gdn = _OnLlamaServer()
    mla_cache = _OnLlamaServer()
    mla_cache_why = _OnLlamaServer()

    def flash_blocked(self, model: ModelSpec, quant: str | None, targets: list[Target]) -> str | None:
        """LlamaCpp.flash_blocked at the build whose kernels this release runs (runtimes/mla_flash.py)."""
        return self._llama.flash_blocked(model, quant, targets)

    @property
    def backend(self) -> str | None:
        """--backend (runtimes/backends.py): the ggml backend of the llama-server Ollama launches."""
        return self._llama.backend

    @backend.setter
    def backend(self, value: str | None) -> None:
        self._llama.backend = value

    # the release's default num_ctx rule (runtimes/versions.py ollama_rules): "tiers" (v0.15.5+), "4096", "2048"
    ctx_rule = "tiers"

    # --- defaults ------------------------------------------------------------------------
    def _default_ctx(self, targets: list[Target]) -> int:
        return default_num_ctx(self._total_vram(targets)) if self.ctx_rule == "tiers" else int(self.ctx_rule)

    def _total_vram(self, targets: list[Target]) -> int:
        # server/routes.go Serve sums gpu.TotalMemory − OLLAMA_GPU_OVERHEAD. On Apple Silicon Ollama's
        # Metal discovery reports recommendedMaxWorkingSetSize as the total (discover/gpu_info_darwin.m),
        # which is what a unified Target's capacity holds.
        total = 0
        for t in targets:
            if t.kind == "gpu":
                total += max(0, (t.total or t.capacity) - self.gpu_overhead)
            elif t.kind == "unified":
                total += max(0, t.capacity - self.gpu_overhead)
        return total

    def _given(self, model: ModelSpec, weights: WeightEstimate, s: Settings,
               targets: list[Target]) -> tuple[list[Target], str]:
        """The devices llama-server is given (ollama_placement.py; v0.30+ with num_gpu unset and several GPUs: one
        GPU, or all of them for --fit to spread over) and why; else the targets as they are."""
        from .versions import OLLAMA_LLAMA_SERVER_FROM, parse_version

        gpus = [t for t in targets if t.kind != "cpu"]
        version = getattr(self, "version", None)
        if len(gpus) > 1 and ngl_free(s) and (split := release_split(self, model, weights, s, gpus)):
            return [gpus[i] for i in split[0]] + [t for t in targets if t.kind == "cpu"], split[2]
        if len(gpus) <= 1 or not ngl_free(s) or (version and parse_version("ollama", version).key
                                                  < OLLAMA_LLAMA_SERVER_FROM):
            return targets, ""
        assert s.ctx is not None
        placed, why = llama_server_gpus(gpus, predicted_vram(model, weights.total, s.ctx * s.parallel),
                                        self.sched_spread)
        return placed + [t for t in targets if t.kind == "cpu"], why

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        num_ctx = settings.ctx or self.context_length or self._default_ctx(targets)
        train = model.max_position_embeddings
        if train and num_ctx > train:
            num_ctx = train       # llm/server.go NewLlamaServer: "requested context size too large for model"
        parallel = max(1, settings.parallel or DEFAULT_NUM_PARALLEL)
        if _family_key(model.family) in SINGLE_SEQUENCE_FAMILIES:
            parallel = 1
        elif (one := self._projector_sequences(model, settings, targets, num_ctx, parallel)) is not None:
            num_ctx, parallel, _ = one      # v0.1.34–v0.4.0: a projector model runs one sequence (ollama_early.py)
        return self._release_flash(model, settings.with_(
            ctx=num_ctx, parallel=parallel,
            cache_type_k=normalize_cache_type(settings.cache_type_k, field="OLLAMA_KV_CACHE_TYPE"),
            cache_type_v=normalize_cache_type(settings.cache_type_v, field="OLLAMA_KV_CACHE_TYPE"),
        ))

    def _projector_sequences(self, model: ModelSpec, settings: Settings, targets: list[Target], ctx: int,
                             parallel: int) -> tuple[int, int, str] | None:
        """(num_ctx, parallel, why) where this release runs a projector model as one sequence (v0.1.34–v0.4.0)."""
        from .ollama_early import projector_sequences
        from .versions import parse_version

        release = getattr(self, "version", None)
        if not release or parallel == 1 or not self.projector(model, settings, targets).size:
            return None
        return projector_sequences(parse_version("ollama", release).key, ctx, parallel)

    # --- allocation ----------------------------------------------------------------------
    def _llama_settings(self, s: Settings, batch: int, ngl: int, n_cpu_moe: int, flash: str) -> Settings:
        return Settings(runtime="llama.cpp", ctx=s.ctx, parallel=s.parallel, cache_type_k=s.cache_type_k,
                        cache_type_v=s.cache_type_v, llamacpp=LlamaCppOptions(
                            batch=batch, ubatch=batch, flash_attn=flash,  # type: ignore[arg-type]
                            n_gpu_layers=ngl, n_cpu_moe=n_cpu_moe, mmproj=False))   # its own projector: .projector

    def projector_rule(self) -> str:
        """Where this release puts a projector (runtimes/versions.py ollama_projector_rule): 'fit-target' (v0.31.2+),
        'offload-check' (v0.30.0–v0.31.1), 'first-gpu' (before v0.30.0)."""
        from .versions import ollama_projector_rule, parse_version

        asked = getattr(self, "version", None)   # set by runtimes._versioned for ollama==X
        return ollama_projector_rule(parse_version("ollama", asked) if asked else None)

    def flash_rule(self, model: ModelSpec, asked: str):
        """This release's flash attention for the model (runtimes/ollama_flash.py): before v0.30 off by default
        but for the architectures Ollama lists, and a quantized KV cache type dropped without it."""
        from .ollama_flash import ollama_flash
        from .versions import parse_version

        release = getattr(self, "version", None)
        a = model.attention_layers[0] if model.attention_layers else None
        return ollama_flash(parse_version("ollama", release).key if release else None, model.family, asked,
                            (a.k_dim, a.v_dim) if a else (1, 1))

    def _release_flash(self, model: ModelSpec, s: Settings) -> Settings:
        """The request's flash attention and KV type as this release runs them (an f16 cache without flash)."""
        rule = self.flash_rule(model, s.llamacpp.flash_attn)
        if not rule.keeps_quantized_kv and _quantized_kv(s):
            s = s.with_(cache_type_k="f16", cache_type_v="f16")
        return s.with_(flash_attn=rule.flash) if rule.flash != s.llamacpp.flash_attn else s

    def _release_flash_words(self, model: ModelSpec, asked: Settings) -> list[str]:
        rule = self.flash_rule(model, asked.llamacpp.flash_attn)
        words = [rule.why] if rule.why else []
        if not rule.keeps_quantized_kv and _quantized_kv(asked) and "PR #6279" not in rule.why:
            words.append(f"OLLAMA_KV_CACHE_TYPE={asked.cache_type_k} ignored without flash attention: an f16 KV "
                         "cache (llm/server.go: \"quantized kv cache requested but flash attention disabled\")")
        return words

    def ram_refusal_words(self) -> str:
        """Where this release words the system-memory refusal (runtimes/versions.py ollama_ram_refusal)."""
        from .versions import ollama_ram_refusal, parse_version

        asked = getattr(self, "version", None)
        return ollama_ram_refusal(parse_version("ollama", asked) if asked else None)

    def projector(self, model: ModelSpec, s: Settings, targets: list[Target]) -> Projector:
        """The projector's bytes, whether it goes on the first GPU, Ollama's reason when not, and --fit's margin. A
        library model with a
        vision / audio tower has its projector (a projector layer, or v. tensors in the file Ollama points --mmproj
        at: llm/llama_server.go NewLlamaServerRunner); a Hub GGUF or an imported file is planned without one (the
        GGUF holds the text model; convert_hf_to_gguf.py writes the tower to a separate --mmproj file; whether an
        hf.co pull also brings a repo's mmproj file is not checked here)."""
        none = Projector(0, False, "", FIT_MARGIN, self.projector_rule())
        if not any(t.role in PROJECTOR_ROLES for t in model.tensors):
            return none
        setup, name, _ = _pulled(model, s)
        if setup or name.startswith("hf.co/"):
            return none
        size = projector_bytes(model)
        gpus = [t for t in targets if t.kind != "cpu"]
        if none.rule == "first-gpu":   # before v0.30: on the first GPU whenever there is one, taken from its free
            # space before the layers are placed (llm/server.go: "so just subtract it from free space"; llm/memory.go
            # gpuZeroOverhead), with no headroom of its own: --fit's stand-in margin plus the projector
            return replace(none, size=size, on_gpu=bool(gpus), why="" if gpus else "cpu-only",
                           margin=FIT_MARGIN + size if gpus else FIT_MARGIN)
        on_gpu, why = projector_on_gpu(s.llamacpp.n_gpu_layers, model.n_layers, gpus, size)
        # --fit's margin: llama.cpp's 1024 MiB, or from v0.31.2, with the projector on the GPU, LLAMA_ARG_FIT_TARGET =
        # ⌈(projector + 1 GiB) / MiB⌉ MiB, which Ollama sets in its place (llm/llama_server.go mmprojFitTargetMiB,
        # extraEnvsForStart: "a stopgap until fit accounts for mmproj memory directly")
        padded = on_gpu and none.rule == "fit-target"
        return replace(none, size=size, on_gpu=on_gpu, why=why,
                       margin=-(-(size + MMPROJ_HEADROOM) // MiB) * MiB if padded else FIT_MARGIN)

    def _fit_probes(self, model: ModelSpec, weights: WeightEstimate, s: Settings, batch: int, flash: str,
                    targets: list[Target], gpu: Target, margin: int) -> FitProbes:
        """The probes of llama.cpp's --fit layer search for this launch (fit_layers): what _fit searches with and
        surely_over asks first. ``margin``: what --fit keeps free (Projector.margin)."""
        def run(ngl: int, ncmoe: int) -> Allocation:
            return self._llama.allocate(model, weights, self._llama_settings(s, batch, ngl, ncmoe, flash), targets)

        def ok(a: Allocation) -> bool:
            # fit compares model+context+compute with the free memory it measures after the backend
            # (CUDA context) is up: in runlocal's terms, the device total (with that context) + margin.
            return a.devices[0].total + margin <= gpu.capacity

        def hopeless(ngl: int, ncmoe: int) -> int:
            # the room the GPU's bytes without its compute buffer leave (LlamaCpp.floor): below 0, no margin
            floor = self._llama.floor(model, weights, self._llama_settings(s, batch, ngl, ncmoe, flash), targets)
            return gpu.capacity - margin - floor[0]

        # answers at other contexts and slot counts of this launch imply some (LayerOutcomes): the search over
        # the context and the one over OLLAMA_NUM_PARALLEL ask --fit again at each point, and the RAM sizes
        # settle_assumed_ram tries too: --fit reads the first GPU only (ok, hopeless), so the launch is keyed
        # without the host's size
        launch = ("ollama --fit", gpu.capacity, margin,
                  self._llama._key(weights, self._llama_settings(s.with_(ctx=None, parallel=1), batch, 0, 0, flash),
                                   list(gpu_side(targets))))
        assert s.ctx is not None
        known = LayerOutcomes.at(model, launch, s.ctx, s.parallel) if s.ctx * s.parallel >= batch else None
        return FitProbes(model, run, ok, hopeless, known, lambda a: gpu.capacity - margin - a.devices[0].total)

    def _fit(self, model: ModelSpec, weights: WeightEstimate, s: Settings, batch: int, flash: str,
             targets: list[Target], gpu: Target, margin: int) -> tuple[int, int, Allocation]:
        """llama.cpp common/fit.cpp common_params_fit_impl with a user-set context (Ollama passes -c):
        keep every layer if the device keeps FIT_MARGIN free; otherwise fill layers back to front —
        for MoE models first with the routed experts in system memory, then give whole layers back."""
        probes = self._fit_probes(model, weights, s, batch, flash, targets, gpu, margin)
        ngl, ncmoe = fit_answer(model, probes)
        return ngl, ncmoe, probes.run(ngl, ncmoe)

    def _fit_overflows_host(self, model: ModelSpec, weights: WeightEstimate, s: Settings, batch: int, flash: str,
                            targets: list[Target]) -> bool:
        """Where --fit places the layers: whatever it answers leaves the host over its RAM (Ollama's "more system
        memory than is available", or llama-server failing to allocate), known before the search ends. Every step of
        fit_layers' order moves tensors from the GPU to the host, so the host's bytes without compute buffers
        (LlamaCpp.floor) never shrink along it; a failing probe puts the answer past it in the order (the search
        keeps one bracket). So once the placement just past the furthest failing probe already holds more than the
        RAM on the host without its compute buffer, so does the answer, and the rest of the search (plans at the
        edge from both sides) is not needed. Only the probes fit_layers itself makes are made, and they are recorded
        for it (tests/unit/test_plan_bounds.py plans each skipped launch)."""
        gpus = [t for t in targets if t.kind != "cpu"]
        host = next((t for t in targets if t.kind == "cpu"), None)
        if not gpus or host is None or host.capacity <= 0:
            return False
        probes = self._fit_probes(model, weights, s, batch, flash, targets, gpus[0],
                                  self.projector(model, s, targets).margin)
        order = probes.order()

        def host_over(ngl: int, ncmoe: int) -> bool:
            return self._llama.floor(model, weights, self._llama_settings(s, batch, ngl, ncmoe, flash),
                                     targets)[-1] > host.capacity

        cut_short = probes.known is not None and probes.known.at_least is None
        past = fit_overflows_host(model, probes, host_over)
        if past is None:
            return False
        if cut_short and past > 0 and probes.known is not None and probes.known.answer is None:
            # for room_when_over's guess: the experts of one more layer moved to the host make a step there, while
            # the GPU's room at the placement that failed moves smoothly with the context; whole layers: the other way
            gpu_room = probes.predicted(*order[past - 1]) if order[past][0] > model.n_layers else None
            last = probes.last_plan
            host_buffer = last.devices[-1].compute if last is not None and last.devices[-1].kind == "cpu" else 0
            probes.known.cut_short(order[past], gpu_room, host_buffer)
        return True

    def engine(self, model: ModelSpec) -> tuple[str, str]:
        """The engine this release runs the model on, and why (runtimes/ollama_engine.py; v0.30+: llama-server)."""
        from .ollama_engine import ollama_engine
        from .versions import parse_version

        release = getattr(self, "version", None)
        return ollama_engine(parse_version("ollama", release).key if release else None,
                             loaded_arch(model) or model.family, self.new_engine)

    def _release_steps(self, given: ModelSpec, model: ModelSpec) -> list[Step]:
        """ollama==X: its speed rules' llama.cpp build (hardware/speed.py) and the engine that runs the model."""
        from .ollama_engine import go_engine_view
        from .versions import ollama_speed_build, parse_version

        if not (asked := getattr(self, "version", None)):
            return []
        build, how = ollama_speed_build(parse_version("ollama", asked))
        engine, why = self.engine(model)
        if engine == "go" and (swa := go_engine_view(as_llamacpp_loads(given), loaded_arch(model) or model.family)[1]):
            why += "; " + swa
        return [Step("llama.cpp build", how, f"b{build}", "runtimes/versions.py, data/ollama_llama_cpp.json"),
                Step("engine", why, engine, "runtimes/ollama_engine.py, data/ollama_engine.json")]

    def _as_loaded(self, model: ModelSpec) -> ModelSpec:
        """The model as this release's engine caches it: llama.cpp's windows; the Go engine's sliding-layer memory."""
        from .ollama_engine import go_engine_view

        model = as_llamacpp_loads(model)
        return go_engine_view(model, loaded_arch(model) or model.family)[0] if self.engine(model)[0] == "go" else model

    def _launch(self, model: ModelSpec, weights: WeightEstimate, settings: Settings, targets: list[Target]):
        """What Ollama passes to llama-server: (settings, flash attention, batch, refusal, steps, assumptions)."""
        model = self._as_loaded(model)   # llama.cpp's windows, not the config's (the Go engine's before v0.30)
        s = self.defaults(model, settings, targets)
        gpus = [t for t in targets if t.kind != "cpu"]
        refusal: str | None = None
        steps: list[Step] = []
        assumptions: list[str] = []

        explicit_ctx = settings.ctx or self.context_length
        tier = self._default_ctx(targets)
        steps.append(Step("num_ctx",
                          f"{'set' if explicit_ctx else f'VRAM tier of {self._total_vram(targets) / GiB:.1f} GiB'}"
                          f" → {explicit_ctx or tier:,}"
                          + (f", capped at the training context {model.max_position_embeddings:,}"
                             if model.max_position_embeddings and (explicit_ctx or tier) > model.max_position_embeddings else ""),
                          f"{s.ctx:,}", f"server/routes.go Serve; llm/server.go NewLlamaServer ({OLLAMA_REF})"))
        if s.parallel != max(1, settings.parallel):
            assert s.ctx is not None   # defaults() sets it
            one = self._projector_sequences(model, settings, targets, s.ctx, settings.parallel)
            assumptions.append(f"Ollama {getattr(self, 'version', None)}: {one[2]}" if one else
                               f"{model.family}: Ollama forces OLLAMA_NUM_PARALLEL to 1 for this architecture")
        elif words := autoselect_words(getattr(self, "version", None), s.parallel):
            assumptions.append(words)   # v0.2.0–v0.9.x autoselect OLLAMA_NUM_PARALLEL; the plan is their fallback

        # --- KV cache type and flash attention -------------------------------------------------
        if s.cache_type_k != s.cache_type_v:
            refusal = (f"Ollama sets K and V to the one OLLAMA_KV_CACHE_TYPE; K {s.cache_type_k} with "
                       f"V {s.cache_type_v} cannot be asked for")
        bad = next((c for c in (s.cache_type_k, s.cache_type_v) if c not in LLAMA_CACHE_TYPES), None)
        if bad:
            refusal = f"OLLAMA_KV_CACHE_TYPE={bad}: llama-server accepts {', '.join(LLAMA_CACHE_TYPES)}"
        assumptions += self._release_flash_words(model, settings)
        quantized_v = s.cache_type_v not in ("f16", "bf16", "f32")
        flash = s.llamacpp.flash_attn
        if quantized_v and flash == "off":
            refusal = refusal or (f"OLLAMA_KV_CACHE_TYPE={s.cache_type_v} needs flash attention, but "
                                  "OLLAMA_FLASH_ATTENTION=0: llama-server refuses to create the context")
        if refusal:
            # still size the memory: an f16 cache when the type cannot be had, flash attention on when V needs it
            if bad or s.cache_type_k != s.cache_type_v:
                s = s.with_(cache_type_k="f16", cache_type_v="f16")
            elif flash == "off":
                flash = "on"

        # --- batch ----------------------------------------------------------------------------------
        assert s.ctx is not None                # set by defaults()
        ctx_total = s.ctx * s.parallel
        if s.llamacpp.batch or (default_batch := release_batch(getattr(self, "version", None))):
            batch = s.llamacpp.batch or default_batch
            steps.append(Step("num_batch", "set (PARAMETER num_batch) → -b and -ub" if s.llamacpp.batch else
                              BATCH_BEFORE_V030, f"{batch}", "llm/llama_server.go appendBatchArgs" if
                              s.llamacpp.batch else "api/types.go DefaultOptions (before v0.30.0)"))
        else:
            pred = predicted_vram(model, weights.total, ctx_total)
            gpus = [t for t in self._given(model, weights, s, targets)[0] if t.kind != "cpu"]   # availableForPlacement
            available = sum(t.capacity for t in gpus)
            cuda = [t for t in gpus if t.kind == "gpu"]
            batch = automatic_batch(ctx_total, pred, available, flash_off_on_cuda=flash == "off" and bool(cuda),
                                    small_cuda_gpu=any((t.total or t.capacity) <= 8 * GiB for t in cuda))
            start = BATCH_LARGE if ctx_total > 32768 else BATCH_MEDIUM if ctx_total > 4096 else BATCH_DEFAULT
            steps.append(Step("num_batch (automatic)",
                              f"context {ctx_total:,} → {start}, lowered while predicted {pred / GiB:.2f} GiB "
                              f"(file + f16 KV) leaves too little of {available / GiB:.2f} GiB "
                              "(≤ 80 %, 75 %/60 % headroom, 768 MiB/2 GiB surcharge)",
                              f"-b {batch} -ub {batch}", "server/sched.go automaticGenerationBatch, PredictServerVRAM"))

        return s, flash, batch, refusal, steps, assumptions

    def surely_over(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                    targets: list[Target]) -> bool:
        """allocate() would overflow a device, known without planning: what llama-server holds apart from compute
        buffers (weights, KV, outputs: the same sum wherever --fit puts the layers) is more than all the devices
        together hold; or, where num_gpu fixes the layers (-ngl, --fit leaves them), more than one device holds;
        or, where --fit places them, whatever it answers leaves more on the host than its RAM (_fit_overflows_host:
        the search's first probes, made for --fit anyway, may settle it). A bound (LlamaCpp.floor: compute buffers
        are never negative), so a search may skip the plan."""
        caps = [t.capacity for t in targets]
        if not caps or any(c <= 0 for c in caps):
            return False
        model = self._as_loaded(model)
        s, flash, batch, refusal, _, _ = self._launch(model, weights, settings, targets)
        targets, placed_why = self._given(model, weights, s, targets)
        if placed_why and sum(t.kind != "cpu" for t in targets) > 1:   # the estimator's -ngl / -ts, else --fit's bound
            if (held := held_floor(self, model, weights, s, batch, flash, targets)) is not None:
                return any(f > t.capacity for f, t in zip(*held))
            return self._llama.surely_over(model, weights, self._llama_settings(s, batch, NGL_AUTO, 0, flash), targets)
        ngl = s.llamacpp.n_gpu_layers
        if ngl is not None and ngl >= 0 and any(t.kind != "cpu" for t in targets):
            # allocate() plans these layers as given: each device's floor against its own capacity, GPUs in order
            # then the host (a CPU share over the host's RAM is a refusal, over a GPU does not fit)
            placed = self._llama.floor(model, weights, self._llama_settings(s, batch, ngl, s.llamacpp.n_cpu_moe, flash),
                                       targets)
            devices = [t for t in targets if t.kind != "cpu"] + [t for t in targets if t.kind == "cpu"][:1]
            if any(f > t.capacity for f, t in zip(placed, devices)):
                return True
        floor = self._llama.floor(model, weights, self._llama_settings(s, batch, 0, 0, flash), targets)
        if sum(floor) > sum(caps):
            return True
        if (ngl is None or ngl < 0) and refusal is None:
            return self._fit_overflows_host(model, weights, s, batch, flash, targets)
        return False

    def room_when_over(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                       targets: list[Target]) -> dict[str, float] | None:
        """A guess of the room (bytes to spare per device, < 0 over) of a plan surely_over skipped, for a search's
        next probe (search.fits_room): where num_gpu fixes the layers, each device's capacity less its bytes without
        compute buffers; else --fit fills the first GPU to its margin and the host holds the rest, so the host's room
        is what all devices hold less the margin and the bytes without compute buffers. Only guides: the verdicts
        decide."""
        from ..boundary import device_keys  # (the rooms' keys: one per device, as search.room keys a plan's)

        model = self._as_loaded(model)
        s, flash, batch, _, _, _ = self._launch(model, weights, settings, targets)
        targets, placed_why = self._given(model, weights, s, targets)
        if placed_why and sum(t.kind != "cpu" for t in targets) > 1:   # as surely_over
            if (held := held_floor(self, model, weights, s, batch, flash, targets)) is not None:
                keys = device_keys(t.name for t in held[1])
                return {k: t.capacity - f for k, f, t in zip(keys, *held) if t.capacity > 0} or None
            return self._llama.room_when_over(model, weights, self._llama_settings(s, batch, NGL_AUTO, 0, flash),
                                              targets)
        devices = [t for t in targets if t.kind != "cpu"] + [t for t in targets if t.kind == "cpu"][:1]
        ngl = s.llamacpp.n_gpu_layers
        if ngl is not None and ngl >= 0:
            placed = self._llama.floor(model, weights, self._llama_settings(s, batch, ngl, s.llamacpp.n_cpu_moe, flash),
                                       targets)
            keys = device_keys(t.name for t in devices)
            return {k: t.capacity - f for k, f, t in zip(keys, placed, devices) if t.capacity > 0} or None
        host = next((t for t in targets if t.kind == "cpu"), None)
        if host is None or not devices:
            return None
        margin = self.projector(model, s, targets).margin
        known = self._fit_probes(model, weights, s, batch, flash, targets, devices[0], margin).known
        if known is not None and known.answer is not None:
            # --fit answered here (the host is over at its answer): the plan's own rooms
            a = self.allocate(model, weights, settings, targets)
            kept = self.kept_free(settings, targets)
            keys = device_keys(d.name for d in a.devices)
            return {k: d.capacity - d.total - kept.get(d.name, 0) for k, d in zip(keys, a.devices) if d.capacity > 0}
        if known is not None and known.at_least is not None:
            # --fit's search cut short where every answer left leaves the host over. Where the next step moves one
            # layer's experts (a step of the host's bytes), the placement before it failing to keep the margin is
            # what the context or the slots moved past: its room under the margin (as kept_free counts the GPU's
            # room of the plans that fit) moves smoothly; where it moves whole layers, the host's room at the first
            # placement left (its bytes without compute buffers, and the host's compute buffer of the search's last
            # plan) does
            gpu_room, host_compute = known.cut_short_guess or (None, 0)
            if gpu_room is not None:
                return {devices[0].name: gpu_room}
            ngl, ncmoe = known.at_least
            on_host = self._llama.floor(model, weights, self._llama_settings(s, batch, ngl, ncmoe, flash), targets)[-1]
            return {host.name: host.capacity - on_host - host_compute}
        floor = self._llama.floor(model, weights, self._llama_settings(s, batch, 0, 0, flash), targets)
        return {host.name: sum(t.capacity for t in devices) - margin - sum(floor)}

    @staticmethod
    def kept_free(settings: Settings, targets: list[Target], *, held: bool = False) -> dict[str, int]:
        """Bytes a device of a launch with these settings keeps free by design (search.fits_room takes them off its
        room; LlamaCpp.kept_free is the same hook): --fit's margin on the GPU it places the layers for, where num_gpu
        is not set. The search for the longest context or the most slots then steps on the room that decides where
        --fit moves the next layer to the host. (``held``: a search that holds the layers where --fit placed them;
        Ollama's searches never do — num_gpu unset, --fit places them at each point.)"""
        ngl = settings.llamacpp.n_gpu_layers
        gpu = next((t for t in targets if t.kind != "cpu"), None)
        return {gpu.name: FIT_MARGIN} if gpu is not None and (ngl is None or ngl < 0) else {}

    def _fit_one_gpu(self, model: ModelSpec, weights: WeightEstimate, s: Settings, batch: int, flash: str,
                     targets: list[Target], fit_margin: int, margin: str, steps: list[Step],
                     assumptions: list[str]) -> tuple[int, int, Allocation, str | None]:
        """llama-server's --fit on the one GPU it is given (or the first): -ngl, --n-cpu-moe, the plan and the
        compromise where layers went to system memory; its step and assumption are appended."""
        gpus = [t for t in targets if t.kind != "cpu"]
        compromise = None
        ngl, ncmoe, alloc = self._fit(model, weights, s, batch, flash, targets, gpus[0], fit_margin)
        gpu_dev = alloc.devices[0]
        # llama.cpp src/llama-model.cpp load_tensors: -ngl k puts the last k − 1 blocks and the output on the GPU
        blocks = model.n_layers if ngl > model.n_layers else max(0, ngl - 1)
        steps.append(Step("layers (llama-server --fit)",
                          f"largest offload with {gpu_dev.total / GiB:.2f} GiB + {margin} "
                          f"≤ {gpus[0].capacity / GiB:.2f} GiB free"
                          + (f"; experts of the first {ncmoe} layers in system memory" if ncmoe else ""),
                          f"-ngl {ngl}: {blocks}/{model.n_layers} repeating layers on the GPU",
                          "llama.cpp common/fit.cpp common_params_fit_impl, common/common.h fit_params_target"))
        if blocks < model.n_layers or ncmoe:
            moved = (f"{model.n_layers - blocks} of {model.n_layers} layers" if blocks < model.n_layers else "")
            moved += (" and " if moved and ncmoe else "") + (f"the experts of {ncmoe} layers" if ncmoe else "")
            assumptions.append(f"Ollama offloads automatically: {moved} run from system memory (slower)")
            # it runs because Ollama gave layers up to system memory: the verdict says so (tight), as for llama.cpp
            compromise = (f"Ollama (llama-server --fit) put {moved} in system memory to fit the GPU: slower "
                          "than all on the GPU (see speed and fixes)")
        return ngl, ncmoe, alloc, compromise

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        given, model = model, self._as_loaded(model)   # llama.cpp's windows (the Go engine's before v0.30), not the config's
        s, flash, batch, refusal, steps, assumptions = self._launch(model, weights, settings, targets)
        asked = self.defaults(model, settings, targets)
        everyone, (targets, placed_why) = targets, self._given(model, weights, s, targets)
        gpus = [t for t in targets if t.kind != "cpu"]
        host = next((t for t in targets if t.kind == "cpu"), None)
        if placed_why:
            steps.append(Step("GPUs given to llama-server", placed_why, ", ".join(t.name for t in gpus),
                              "server/sched.go selectLlamaServerPlacement, bestSingleGPUFit (v0.30+)" if "llm/memory.go"
                              not in placed_why else "server/sched.go pickBestFullFitByLibrary (v0.7.1–v0.11.4)"))
        assert s.ctx is not None                # set by defaults()
        ctx_total = s.ctx * s.parallel
        projector = self.projector(model, s, targets)   # once: it resolves the library tag and sums the tower
        margin = (f"{projector.margin // MiB} MiB margin" if projector.rule != "first-gpu" or not projector.on_gpu
                  else f"{FIT_MARGIN // MiB} MiB margin + {projector.size / MiB:.0f} MiB projector, taken from the "
                       "free space first (llm/server.go)")

        # --- layers: -ngl set by the user (PARAMETER num_gpu), else llama-server --fit -----------
        compromise, split = None, None
        if not gpus:
            ngl, ncmoe = 0, 0
            alloc = self._llama.allocate(model, weights, self._llama_settings(s, batch, 0, 0, flash), targets)
        elif len(gpus) > 1 and placed_why and (split := release_split(self, model, weights, s, gpus)):
            ngl, ncmoe = split[1].layers, 0   # before v0.11.5: --n-gpu-layers and --tensor-split as estimated
            alloc = self._llama.allocate(model, weights, self._llama_settings(s, batch, ngl, 0, flash).with_(
                tensor_split=tuple(float(c) for c in split[1].counts)), targets)
        elif len(gpus) > 1 and placed_why:
            # several GPUs and -ngl unset: llama-server's own --fit spreads the layers over them (fit.cpp steps 3–4)
            alloc = self._llama.allocate(model, weights, self._llama_settings(s, batch, NGL_AUTO, 0, flash), targets)
            ngl, ncmoe = alloc.settings.llamacpp.n_gpu_layers or 0, 0
            compromise = alloc.compromise
        elif s.llamacpp.n_gpu_layers is not None and s.llamacpp.n_gpu_layers >= 0:
            ngl, ncmoe = s.llamacpp.n_gpu_layers, s.llamacpp.n_cpu_moe
            alloc = self._llama.allocate(model, weights, self._llama_settings(s, batch, ngl, ncmoe, flash), targets)
            steps.append(Step("layers", "num_gpu set: passed as -ngl, --fit leaves it alone", f"-ngl {ngl}",
                              "llm/llama_server.go startLlamaServer; llama.cpp common/fit.cpp"))
        else:
            ngl, ncmoe, alloc, compromise = self._fit_one_gpu(model, weights, s, batch, flash, targets, projector.margin,
                                                              margin, steps, assumptions)

        devices, projector_step = place_projector(model, projector, alloc.devices)
        if placed_why:   # the GPUs Ollama did not give llama-server: idle, listed where they stand
            used = dict(zip(map(id, gpus), (d for d in devices if d.kind != "cpu")))
            devices = tuple(used.get(id(t)) or DeviceMemory(t.name, t.kind, t.capacity)
                            for t in everyone if t.kind != "cpu") + tuple(d for d in devices if d.kind == "cpu")
        steps += [projector_step] if projector_step else []
        steps += self._release_steps(given, model)
        layers_assumption = (estimator_words(split[1], self.gpu_overhead)[0] if split else
                             f"GPU layers by llama-server --fit ({FIT_MARGIN // MiB} MiB margin per GPU) over "
                             f"{len(gpus)} GPUs (the projector's own margin not counted)" if len(gpus) > 1 else
                             f"GPU layers by llama-server --fit ({margin}); "
                             + ("the one GPU Ollama gives it" if placed_why else "first GPU only")
                             if gpus and ngl_free(s) else
                             f"GPU layers: num_gpu {s.llamacpp.n_gpu_layers}, passed as -ngl (--fit leaves them)"
                             if gpus else "no GPU: every layer in system memory")

        # --- refusal: the CPU share against host RAM ----------------------------------------------
        cpu_dev = next((d for d in devices if d.kind == "cpu"), None)
        if refusal is None and cpu_dev is not None and host is not None and host.capacity > 0:
            refusal = ram_refusal(getattr(self, "version", None), cpu_dev.total, host.capacity,
                                  sum(d.total for d in devices), sum(t.capacity for t in gpus), human_bytes2)

        s_out = asked.with_(batch=settings.llamacpp.batch, ubatch=settings.llamacpp.ubatch)
        return Allocation(
            settings=s_out, devices=devices, kv_bytes_per_token=alloc.kv_bytes_per_token,
            kv_cache_tokens=None, max_concurrency=None, refusal=refusal, compromise=compromise,
            steps=tuple(steps) + alloc.steps, host_repacked=alloc.host_repacked, kv_split=alloc.kv_split,
            assumptions=(launch_words(getattr(self, "version", None), self.engine(model)[0] == "go", s, ctx_total, batch,
                                      ngl if gpus else 0, flash, split[1].counts if split else (), projector.on_gpu),
                         layers_assumption,
                         *(estimator_words(split[1], self.gpu_overhead)[1:] if split else
                           ["OLLAMA_GPU_OVERHEAD only changes the default-context tier in v0.30+ (placement is --fit's)"]),
                         self.ram_refusal_words(),
                         *assumptions, *alloc.assumptions),
        )

    # --- command ------------------------------------------------------------------------
    def flash_attention_switch(self) -> str:
        """`ollama serve`'s switch (envconfig/config.go FlashAttention; docs/faq.md "How can I enable Flash
        Attention?"), passed on as llama-server's --flash-attn (llm/llama_server.go)."""
        return "OLLAMA_FLASH_ATTENTION=1"

    def command(self, model: ModelSpec, settings: Settings) -> str:
        # Server-wide choices are environment variables of `ollama serve` (envconfig/config.go); per-model
        # ones are PARAMETER lines in a Modelfile (or `/set parameter …` inside `ollama run`).
        s = settings
        env = []
        if s.parallel > 1:
            env.append(f"OLLAMA_NUM_PARALLEL={s.parallel}")
        quantized = s.cache_type_k != "f16" or s.cache_type_v != "f16"
        if s.llamacpp.flash_attn == "on" or s.cache_type_v not in ("f16", "bf16", "f32"):
            env.append("OLLAMA_FLASH_ATTENTION=1")     # a quantized V cache needs it (llama.cpp src/llama-context.cpp)
        elif s.llamacpp.flash_attn == "off" and self.flash_rule(model, "auto").flash != "off":
            env.append("OLLAMA_FLASH_ATTENTION=0")     # not where the release has it off already
        if quantized:
            env.append(f"OLLAMA_KV_CACHE_TYPE={s.cache_type_k}")
        if self.gpu_overhead:
            env.append(f"OLLAMA_GPU_OVERHEAD={self.gpu_overhead}")
        params: list[tuple[str, object]] = []
        if s.ctx:
            params.append(("num_ctx", s.ctx))
        if s.llamacpp.n_gpu_layers is not None and s.llamacpp.n_gpu_layers >= 0:
            params.append(("num_gpu", s.llamacpp.n_gpu_layers))
        if s.llamacpp.batch:
            params.append(("num_batch", s.llamacpp.batch))
        # a real library tag (qwen3:30b-a3b-q4_K_M), else hf.co/<repo>:<quant> or an import (runtimes/published.py)
        setup, name, note = _pulled(model, s)
        steps = [setup] if setup else []
        if params:
            derived = re.sub(r"[^a-z0-9._-]+", "-", name.split("/")[-1].lower()) + "-runlocal"
            steps.append(modelfile_command(name, params, derived))
            name = derived
        line = (" ".join(env + ["ollama serve"]) + " & " if env else "") + " && ".join(steps + [f"ollama run {name}"])
        note = "; ".join(filter(None, [note, ollama_service_note(env) if env else ""]))   # a service holds 11434
        return line + (f"  # {note}" if note else "")


def _pulled(model: ModelSpec, s: Settings) -> tuple[str, str, str | None]:
    """(shell that imports the model first or "", the name `ollama run` pulls, a note): the Hub name the user gave
    (settings.llamacpp.ollama_pull), else published.ollama_model's library tag, hf.co name or import."""
    if s.llamacpp.ollama_pull:
        return "", s.llamacpp.ollama_pull, None
    from .published import ollama_model

    return ollama_model(model, s.quant)


def modelfile_command(base: str, params: list[tuple[str, object]], derived: str) -> str:
    """The shell line that sets per-model options: a Modelfile FROM ``base`` with a PARAMETER line per option
    (docs/modelfile.mdx: ``PARAMETER <parameter> <parametervalue>``), created as ``derived`` (`ollama create NAME -f
    Modelfile`), so the line runs as pasted, also against an `ollama serve` already running. `runlocal check`'s
    commands and `runlocal diagnose`'s fixes both use it."""
    lines = "\\n".join([f"FROM {base}"] + [f"PARAMETER {name} {value}" for name, value in params])
    return f"printf '{lines}\\n' > Modelfile && ollama create {derived} -f Modelfile"


def human_bytes2(n: float) -> str:
    """format.HumanBytes2 (ollama/format/bytes.go): binary units with one decimal, as Ollama logs sizes."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


__all__ = ["Ollama", "automatic_batch", "default_num_ctx", "modelfile_command", "predicted_vram"]
