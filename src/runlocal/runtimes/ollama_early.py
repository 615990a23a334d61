"""Ollama's rules that runlocal models, read back to v0.1.0 (`--runtime ollama==X`; versions.ollama_rules says which).

Read in ollama/ollama at the release tags (`git show vX:path`), each boundary at the commit that moved it and the first
release tag holding that commit. Releases before v0.1.0 (v0.0.x) are not checked: they are planned with v0.1.0's
rules and the plan says so (OLDEST_CHECKED).

num_ctx unset       2048 from v0.0.10 to v0.6.6 (api/types.go DefaultOptions NumCtx: v0.1.0 :291, v0.1.33 :421,
                    v0.2.0 :508, v0.3.13 :611): versions.OLLAMA_CTX_RULES, unchanged by this reading.
num_batch unset     512 in every release read (api/types.go DefaultOptions NumBatch, the same lines + 1 or 2):
                    ollama_estimate.DEFAULT_NUM_BATCH.
OLLAMA_NUM_PARALLEL none before v0.1.33: llm/server.go (v0.1.32) starts the server without --parallel, and earlier
                    releases ran llama.cpp in-process or its own server; one sequence.
                    1 from v0.1.33 (34b9db5af "Request and model concurrency": server/sched.go `var numParallel = 1`;
                    envconfig/config.go `NumParallel = 1` from v0.1.34 f56aa2001).
                    "Autoselect" from v0.2.0 (17b7186cd "Enable concurrency by default", 9929751cc; first tagged
                    v0.1.49-rc1): envconfig NumParallel = 0, and server/sched.go pickBestFitGPUs tries
                    defaultParallel = 4 then 1, num_ctx × that, keeping the first at which llm/memory.go PredictServerFit
                    puts every layer (blocks + output) on one GPU, else on all GPUs of a library; no fit at all: 1
                    (pickBestPartialFitByLibrary); a CPU-only machine: defaultParallel ("simplifying assumption").
                    defaultParallel = 2 from v0.6.7 (fe5b9bb21 "lower default num parallel to 2").
                    1 from v0.10.0 (20c3266e9 "Reduce default parallelism to 1 (#11330)", first tagged v0.9.7-rc0).
projector           a model with a projector runs one sequence: v0.1.34 – v0.1.48 in llm/server.go NewLlamaServer
                    (1b0e6c9c0, ollama#4164: `--parallel 1`, while server/sched.go has already multiplied num_ctx by
                    OLLAMA_NUM_PARALLEL, v0.1.45 :73, so the one sequence holds num_ctx × P), v0.2.0 – v0.4.0 in
                    server/sched.go before num_ctx is multiplied (17b7186cd: num_ctx as set); lifted in v0.4.1 for every
                    projector model but mllama (6cd566872).
system memory       no refusal of Ollama's own before v0.2.0 (v0.1.4 – v0.1.18 had a macOS-only table by the model's
                    size class, llm/llm.go "model requires at least %s of (total) memory", bd6e38fb1, removed by 08f1e1896 in
                    v0.1.19: not modelled). v0.2.0 – v0.2.1: server/sched.go, on Linux, "requested model (%s) is too
                    large for this system (%s)" where the estimate's TotalSize exceeds free RAM + the GPUs' free memory
                    (3c75113e3). v0.2.2 on: llm/server.go NewLlamaServer, on Linux, "model requires more system memory
                    (%s) than is available (%s)", TotalSize − VRAMSize against free RAM + free swap (791650dde, #5626);
                    later releases moved it (versions.OLLAMA_RAM_REFUSAL).
flash attention     none before v0.1.39 (no OLLAMA_FLASH_ATTENTION: e15307fdf #4120, 38255d2af #4580); from v0.1.39 only
                    with OLLAMA_FLASH_ATTENTION=1 and only on CUDA compute capability 7+ or Metal (llm/server.go, to
                    v0.4.x; v0.5.0 asks gpus.FlashAttentionSupported()); v0.1.39 alone also drops it when a layer stays
                    off the GPU ("partial offloading does not support flash attention", lifted by a50a87a7b #4734 in
                    v0.1.40): runtimes/ollama_flash.py.
KV cache type       f16 in every release before v0.5.0 (ollama_flash.KV_CACHE_TYPE_FROM).

Read but with nothing to switch in runlocal's plan: the projector counted in Ollama's own estimate on the first GPU
from v0.1.33 (llm/memory.go EstimateGPULayers: memoryMinimum += projectorMemoryRequirements), not counted before
(v0.1.32 llm/llm.go hands it to the server only) — the plan puts it on the first GPU in every release before v0.30
(versions.ollama_projector_rule); OLLAMA_GPU_OVERHEAD from v0.3.10 (b05c9e83d, #5922; runlocal reads it
only in the v0.7.1 – v0.11.4 estimator and the v0.15.5+ context tiers); OLLAMA_MAX_LOADED_MODELS from v0.1.33 (runlocal
plans one model). Not ported: Ollama's own layer estimate, which sets --n-gpu-layers for one GPU in every release before
v0.30 — llm/llm.go NumGPU by free VRAM ÷ layer size (v0.1.0 – v0.1.18), llm/llm.go's size estimates (08f1e1896,
v0.1.19 – v0.1.32), llm/memory.go EstimateGPULayers from v0.1.33 (34b9db5af), changed in v0.1.33 (7bb7cb8a6 output
tensors only, f81f30811 gemma / command-r layers, f0c454ab5 +512 MiB Metal minimum), v0.1.34 (4736391bf a minimum from
the layer size), v0.1.38 (50b9056e0 count up to num_gpu), v0.1.45 (6fd04ca92 multi-GPU at the limit, 359b15a59
divergent layer sizes, 8e0641a9b asymmetric K/V), v0.3.10 (b05c9e83d OLLAMA_GPU_OVERHEAD) — and its graph estimate
(llm/ggml.go GraphSize): written per architecture in v0.1.32 (12e923e15, 7e33a017c partial offload, 26df67478 scaled by
the GPU count), all non-repeating layers counted in v0.1.33 (a8b9b930b), deepseek2 from v0.1.45 (e873841cb), gemma2 from
v0.1.48 (de2163daf), chatglm from v0.2.2 (5a739ff4c), llama's full-offload graph at least 4 × batch × (embedding +
vocab) from v0.3.10 (2003d6015; before, 4 × batch × (1 + 4 × embedding + context × (1 + heads)) alone). Those releases
are planned with llama-server's --fit placement, which the plan says.
Pure computation: no I/O.
"""

from __future__ import annotations

from ..errors import InputError
from .release_numbers import dotted_key

OLDEST_CHECKED = (0, 1, 0)
PARALLEL_FLAG_FROM = (0, 1, 33)      # 34b9db5af: --parallel and OLLAMA_NUM_PARALLEL
PROJECTOR_ONE_SEQUENCE = ((0, 1, 34), (0, 4, 1))   # 1b0e6c9c0 … lifted by 6cd566872 (v0.4.1)
PROJECTOR_IN_SCHED_FROM = (0, 2, 0)  # 17b7186cd: the rule moved to server/sched.go, before num_ctx × parallel
SCHED_REFUSAL_FROM = (0, 2, 0)       # 3c75113e3 "Prevent loading models larger than total memory"
SERVER_REFUSAL_FROM = (0, 2, 2)      # 791650dde "sched: only error when over-allocating system memory (#5626)"
OWN_PROCESS_FROM = (0, 1, 32)        # llm/server.go starts ollama_llama_server (v0.1.31: llm/dyn_ext_server.go)

# OLLAMA_NUM_PARALLEL unset: (first release, sequences tried first (0: no such setting, 1: fixed), source)
PARALLEL_DEFAULTS: tuple[tuple[tuple[int, ...], int, str], ...] = (
    ((0,), 0, "no OLLAMA_NUM_PARALLEL before v0.1.33: the server starts without --parallel (llm/server.go v0.1.32)"),
    (PARALLEL_FLAG_FROM, 1, "server/sched.go numParallel = 1 (34b9db5af, v0.1.33); envconfig NumParallel = 1 (v0.1.34)"),
    ((0, 2, 0), 4, "envconfig NumParallel = 0 // Autoselect, server/sched.go defaultParallel = 4 (17b7186cd, "
                   "9929751cc; v0.2.0)"),
    ((0, 6, 7), 2, "server/sched.go defaultParallel = 2 (fe5b9bb21 \"lower default num parallel to 2\", v0.6.7)"),
    ((0, 10, 0), 1, "envconfig NumParallel = Uint(\"OLLAMA_NUM_PARALLEL\", 1) (20c3266e9, #11330, v0.10.0)"),
)


def _era(key: tuple[int, ...]) -> tuple[int, str]:
    return [(tried, source) for first, tried, source in PARALLEL_DEFAULTS if key[:3] >= first][-1]


def parallel_default(key: tuple[int, ...] | None) -> int:
    """The sequences OLLAMA_NUM_PARALLEL unset tries first in this release: 1 where fixed (or no such setting), 4 or 2
    where the release autoselects (pickBestFitGPUs falls back to 1 where that does not fit); None: the current."""
    return 1 if key is None else max(1, _era(key)[0])


def parallel_words(key: tuple[int, ...] | None) -> str:
    """What OLLAMA_NUM_PARALLEL unset means in this release, with its source, for the release's rules."""
    if key is None:
        return ""
    tried, source = _era(key)
    if tried == 0:
        return f"one sequence ({source})"
    if tried == 1:
        return f"OLLAMA_NUM_PARALLEL unset: 1 ({source})"
    return (f"OLLAMA_NUM_PARALLEL unset: autoselect, {tried} sequences (KV for num_ctx × {tried}) where Ollama's own "
            f"estimate puts every layer on the GPUs (a CPU-only machine: always {tried}), else 1 (server/sched.go "
            f"pickBestFitGPUs; {source})")


def _key(release: str) -> tuple[int, ...]:
    """ollama==release's numbers (release_numbers.py, as versions.parse_version reads them: it sets the release)."""
    key = dotted_key(release)
    if key is None:
        raise InputError(f"runtime: ollama=={release}: expected a release number such as 0.4.1")
    return key


def autoselect_words(release: str | None, parallel: int) -> str | None:
    """The plan's assumption where ``ollama==release`` autoselects and the plan runs one sequence: runlocal's request
    does not tell OLLAMA_NUM_PARALLEL=1 from unset (runtimes/base.py Settings keeps 1 for Ollama), so the plan is the
    autoselect's fallback, and says so; None otherwise (the current release: None)."""
    if not release or parallel != 1 or (tried := parallel_default(_key(release))) == 1:
        return None
    return (f"OLLAMA_NUM_PARALLEL: planned at 1; Ollama {release} with it unset first tries {tried} (num_ctx × {tried} "
            f"of KV) and keeps it where its estimate puts every layer on the GPUs, else 1 (server/sched.go "
            f"pickBestFitGPUs, defaultParallel = {tried}) — --parallel {tried} plans that case")


def projector_sequences(key: tuple[int, ...] | None, ctx: int, parallel: int) -> tuple[int, int, str] | None:
    """(num_ctx, parallel, why) for a model with a projector where this release runs it as one sequence; None where
    it does not (or the plan has one already)."""
    if key is None or parallel == 1 or not PROJECTOR_ONE_SEQUENCE[0] <= key[:3] < PROJECTOR_ONE_SEQUENCE[1]:
        return None
    if key[:3] < PROJECTOR_IN_SCHED_FROM:
        return (ctx * parallel, 1, f"a model with a projector: --parallel 1 with --ctx-size num_ctx × {parallel} "
                "(llm/server.go NewLlamaServer, \"multimodal models don't support parallel requests yet\", 1b0e6c9c0; "
                "server/sched.go multiplied num_ctx first; v0.1.34–v0.1.48)")
    return (ctx, 1, "a model with a projector: OLLAMA_NUM_PARALLEL set to 1 before num_ctx is multiplied (server/sched.go, "
            "\"multimodal models don't support parallel requests yet\", 17b7186cd; v0.2.0–v0.4.0, lifted by "
            "6cd566872 in v0.4.1)")


def ram_refusal(release: str | None, cpu_total: int, host: int, total: int, vram: int, human) -> str | None:
    """The system-memory refusal of ``ollama==release`` (None: the current's wording) for a plan whose host holds
    ``cpu_total`` of its RAM ``host``, ``total`` over every device, ``vram`` the GPUs' capacity: none before v0.2.0;
    server/sched.go's total against RAM + VRAM in v0.2.0–v0.2.1; from v0.2.2 the CPU share against the RAM
    (llm/server.go; worded alike until v0.30). ``human``: format.HumanBytes2."""
    key = _key(release)[:3] if release else None
    if key is not None and key < SCHED_REFUSAL_FROM:
        return None
    if key is not None and key < SERVER_REFUSAL_FROM:
        return (f"requested model ({human(total)}) is too large for this system ({human(host + vram)})"
                if total > host + vram else None)
    if cpu_total > host:
        return f"model requires more system memory ({human(cpu_total)}) than is available ({human(host)})"
    return None


def ram_refusal_where(key: tuple[int, ...], text: str) -> str | None:
    """Where a release before v0.2.2 refuses for system memory (the plan's assumption); None from v0.2.2."""
    if key[:3] >= SERVER_REFUSAL_FROM:
        return None
    if key[:3] < SCHED_REFUSAL_FROM:
        return (f"Ollama {text} has no system-memory refusal of its own (it came in v0.2.0, 3c75113e3; v0.1.4–v0.1.18's "
                "macOS-only size-class check, llm/llm.go \"model requires at least %s of (total) memory\", is not modelled): a "
                "CPU share over the RAM is not refused, it pages or fails in the runner")
    return (f"the refusal message is Ollama {text}'s \"requested model (X) is too large for this system (Y)\" (server/"
            "sched.go, Linux: the estimate's total against free RAM + the GPUs' free memory; 3c75113e3, v0.2.0–v0.2.1), "
            f"at ollama/ollama v{text}")


def not_checked_words(key: tuple[int, ...], text: str) -> str:
    """The rules note of a release older than every one read: planned with the oldest's rules, and said so."""
    if key[:3] >= OLDEST_CHECKED:
        return ""
    oldest = ".".join(map(str, OLDEST_CHECKED))
    return (f"; Ollama {text} is older than the oldest release whose memory rules were read (v{oldest}): not checked, "
            f"planned with v{oldest}'s")


def launch_before_own_process(key: tuple[int, ...], text: str) -> str | None:
    """The launch assumption of a release that did not start ollama_llama_server (before v0.1.32); None from it."""
    if key[:3] >= OWN_PROCESS_FROM:
        return None
    how = ("llama.cpp's server linked into Ollama as a library (llm/ext_server, v0.1.18–v0.1.31)"
           if key[:3] >= (0, 1, 18) else "llama.cpp's own server binary, started by llm/llama.go (v0.1.0–v0.1.17)")
    return (f"ollama/ollama v{text}: {how}, one sequence, -c num_ctx and --n-gpu-layers from Ollama's own estimate; its "
            "command line is not modelled")


__all__ = ["OLDEST_CHECKED", "autoselect_words", "launch_before_own_process", "not_checked_words", "parallel_default",
           "parallel_words", "projector_sequences", "ram_refusal", "ram_refusal_where"]
