"""What every runtime planner takes and returns.

A runtime turns (model, weights, settings, devices) into an Allocation: the bytes it puts on each
device, the KV capacity, and the formulas that produced them (shown by --explain).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate

DeviceKind = Literal["gpu", "cpu", "unified"]

# --parallel not given. llama-server's own default is -np -1, "auto" (common/arg.cpp), which it turns into 4 slots
# sharing one unified KV cache (tools/server/server.cpp; runtimes/llamacpp.py plans it); every other runtime reads
# an unset --parallel as 1, its own default (Settings.__post_init__ stores 1 for them).
PARALLEL_AUTO = -1
# GPUs in one server node (HGX/DGX); more than this, vLLM and SGLang span nodes (their multi-node launch commands)
GPUS_PER_NODE = 8
# The names users type for each engine → its planner module (runtimes/__init__.py get_runtime)
RUNTIME_ALIASES = {
    "llama.cpp": "llamacpp", "llamacpp": "llamacpp", "llama-cpp": "llamacpp", "llama-server": "llamacpp",
    "llama_cpp": "llamacpp",
    "vllm": "vllm",
    "ollama": "ollama", "sglang": "sglang", "transformers": "transformers", "hf": "transformers",
    "huggingface": "transformers", "mlx": "mlx", "mlx-lm": "mlx", "mlx_lm": "mlx",
}
_AUTO_SLOT_RUNTIMES = frozenset(name for name, module in RUNTIME_ALIASES.items() if module == "llamacpp")


@dataclass(frozen=True)
class Target:
    """A device memory is planned on: a GPU, the host (CPU RAM), or unified memory."""

    name: str
    kind: DeviceKind
    capacity: int                    # bytes this runtime may use on it
    bandwidth_gbs: float | None = None
    total: int | None = None         # physical size, when capacity is a share of it


@dataclass(frozen=True)
class Settings:
    runtime: str = "llama.cpp"
    ctx: int | None = None                      # per-request context; None → the runtime's default
    quant: str | None = None                    # None → as stored in the file / config dtype
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    parallel: int = PARALLEL_AUTO               # concurrent sequences (llama.cpp --parallel, vLLM --max-num-seqs);
                                                # PARALLEL_AUTO: not given (llama-server's auto, 1 elsewhere)
    batch: int | None = None
    ubatch: int | None = None
    flash_attn: Literal["on", "off", "auto"] = "auto"
    n_gpu_layers: int | None = None             # None → all that the runtime offloads by default
    n_cpu_moe: int = 0
    # llama.cpp -ot / --override-tensor: (regex, buffer type: CPU, CUDA0 …) in order, the first match wins
    override_tensor: tuple[tuple[str, str], ...] = ()
    kv_unified: bool = False                    # llama.cpp --kv-unified: one KV stream shared by all sequences
    swa_full: bool = False                      # llama.cpp --swa-full: sliding-window layers keep the full context
    mmap: bool = True                           # llama.cpp: weights memory-mapped from the file (--no-mmap reads them)
    kv_offload: bool = True                     # llama.cpp --no-kv-offload / -nkvo (False): KV and recurrent state in RAM
    enable_lora: bool = False                   # vLLM --enable-lora: LoRA slots preallocated (runtimes/vllm_lora.py)
    max_loras: int = 1                          # vLLM --max-loras
    max_lora_rank: int = 16                     # vLLM --max-lora-rank
    dp: int = 1                                 # vLLM --data-parallel-size: engine replicas (runtimes/vllm_parallel.py)
    expert_parallel: bool = False               # vLLM --enable-expert-parallel: whole experts per rank
    fit: bool = True                            # llama.cpp --fit on|off: fit an unset context and -ngl to free memory
    tensor_split: tuple[float, ...] = ()        # llama.cpp -ts 3,1: the GPUs' shares of the layers (default: free memory)
    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: int | None = None
    tp: int = 1
    pp: int = 1
    enforce_eager: bool = False
    mem_fraction_static: float | None = None
    max_new_tokens: int | None = None           # transformers generate(): the prompt is ctx − this (None: all of ctx)
    attn_implementation: str | None = None      # transformers: "sdpa" (its default) or "eager"

    def __post_init__(self) -> None:
        if self.parallel == PARALLEL_AUTO and self.runtime.strip().lower() not in _AUTO_SLOT_RUNTIMES:
            object.__setattr__(self, "parallel", 1)

    def with_(self, **changes) -> Settings:
        return replace(self, **changes)


@dataclass(frozen=True)
class Step:
    """One formula for --explain: what, how, the value, and where the rule comes from."""

    label: str
    formula: str
    value: str
    source: str = ""


@dataclass(frozen=True)
class DeviceMemory:
    name: str
    kind: DeviceKind
    capacity: int
    weights: int = 0
    kv_cache: int = 0
    compute: int = 0
    overhead: int = 0

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.compute + self.overhead


@dataclass(frozen=True)
class Allocation:
    settings: Settings                          # with the runtime's defaults filled in
    devices: tuple[DeviceMemory, ...]
    kv_bytes_per_token: int
    kv_cache_tokens: int | None = None          # the pool's size when the runtime preallocates one
    max_concurrency: float | None = None
    refusal: str | None = None                  # the runtime would refuse to start (and why)
    steps: tuple[Step, ...] = ()
    assumptions: tuple[str, ...] = field(default=())
    # the runtime itself cut what was left unset to make it fit (llama.cpp --fit: layers or experts moved to
    # system memory, a shorter context): it runs, at a cost the plan says; the verdict is then "tight"
    compromise: str | None = None


def largest(lo: int, hi: int, ok) -> int | None:
    """Largest n in [lo, hi] with ok(n), assuming ok is monotone decreasing; None if ok(lo) fails.
    hi is tried first: most searches (the longest context, the most layers) end there, after two plans
    instead of log2(hi − lo); otherwise a bisection of [lo, hi − 1]."""
    if not ok(lo):
        return None
    if lo >= hi or ok(hi):
        return max(lo, hi)
    hi -= 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


# llama.cpp file types offered as smaller weights, least quality given up first
GGUF_LADDER = ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M", "Q2_K")


@dataclass(frozen=True)
class Levers:
    """What a runtime lets a user change to make a plan fit; fixes.py re-plans with each."""

    weight_quants: tuple[str, ...] = ()     # smaller weight formats this runtime loads, least loss first
    kv_cache_types: tuple[str, ...] = ()    # quantized KV cache types it offers, least loss first
    layer_offload: bool = False             # keep some layers on the CPU (-ngl, Ollama's num_gpu)
    budget: str | None = None               # its memory-budget setting: gpu_memory_utilization, mem_fraction_static
    budget_max: float = 0.95
    tensor_parallel: bool = False


GGUF_LEVERS = Levers(weight_quants=GGUF_LADDER, kv_cache_types=("q8_0", "q4_0"), layer_offload=True)
# vLLM: --quantization fp8 quantizes a 16-bit checkpoint at load; --kv-cache-dtype fp8; --tensor-parallel-size
POOL_LEVERS = Levers(weight_quants=("fp8",), kv_cache_types=("fp8",), budget="gpu_memory_utilization",
                     tensor_parallel=True)


def levers_of(runtime: Runtime) -> Levers:
    return getattr(runtime, "levers", None) or (POOL_LEVERS if runtime.pools_kv else Levers())


class Runtime(Protocol):
    name: str
    pools_kv: bool          # True when the runtime preallocates a KV pool from a memory budget (vLLM, SGLang)
    levers: Levers          # optional: what fixes may change (levers_of gives a default)

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings: ...

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation: ...

    def command(self, model: ModelSpec, settings: Settings) -> str: ...
