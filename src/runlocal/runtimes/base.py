"""What every runtime planner takes and returns.

A runtime turns (model, weights, settings, devices) into an Allocation: the bytes it puts on each
device, the KV capacity, and the formulas that produced them (shown by --explain).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from .options import OPTION_OF_FIELD, LlamaCppOptions, MLXOptions, SGLangOptions, TransformersOptions, VLLMOptions
from .registry import find_engine

if TYPE_CHECKING:
    from .llamacpp_nohost import Repacked

DeviceKind = Literal["gpu", "cpu", "unified"]

# --parallel not given (registry.Engine.auto_parallel): llama-server's "auto", vLLM's / SGLang's own default; the other
# engines store 1, their default
PARALLEL_AUTO = -1
# GPUs in one server node (HGX/DGX); more than this, vLLM and SGLang span nodes (their multi-node launch commands)
GPUS_PER_NODE = 8


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
    """What a plan is asked for: the fields every engine reads, and one options object per engine
    (runtimes/options.py). A planner reads its own (``settings.llamacpp`` for llama.cpp and Ollama,
    ``settings.vllm`` …); ``check.build_settings`` builds them all from the request."""

    runtime: str = "llama.cpp"
    ctx: int | None = None                      # per-request context; None → the runtime's default
    quant: str | None = None                    # None → as stored in the file / config dtype
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    parallel: int = PARALLEL_AUTO               # concurrent sequences (llama.cpp --parallel, vLLM --max-num-seqs);
                                                # PARALLEL_AUTO: not given (llama-server's auto, vLLM's / SGLang's
                                                # default, 1 elsewhere)
    # GPUs one engine instance spans: vLLM/SGLang --tensor-parallel-size / --pipeline-parallel-size (1 for the
    # engines that split layers by memory instead); the speed model and the "more GPUs" fix read them for any engine
    tp: int = 1
    pp: int = 1
    llamacpp: LlamaCppOptions = LlamaCppOptions()           # llama.cpp and Ollama
    vllm: VLLMOptions = VLLMOptions()
    sglang: SGLangOptions = SGLangOptions()
    transformers: TransformersOptions = TransformersOptions()
    mlx: MLXOptions = MLXOptions()
    # the prompt the speed figures are for (request.py --prompt-tokens): prefill over it, the time to its first token;
    # no memory figure reads it (llama.cpp reserves for the context, not the prompt)
    prompt_tokens: int = 512

    def __post_init__(self) -> None:
        if self.parallel == PARALLEL_AUTO:
            known = find_engine(self.runtime)
            if not (known and known.auto_parallel):
                object.__setattr__(self, "parallel", 1)

    def with_(self, **changes: Any) -> Settings:
        """A copy with ``changes``: common fields by name, and any engine option by its field name (unique across
        the options types), which goes into the options object that declares it."""
        if OPTION_OF_FIELD.keys().isdisjoint(changes):      # the searches' ctx / parallel: one replace
            return replace(self, **changes)
        common = {k: v for k, v in changes.items() if k not in OPTION_OF_FIELD}
        by_attr: dict[str, dict[str, Any]] = {}
        for name in changes.keys() - common.keys():
            by_attr.setdefault(OPTION_OF_FIELD[name], {})[name] = changes[name]
        for attr, own in by_attr.items():
            common[attr] = replace(getattr(self, attr), **own)
        return replace(self, **common)

    def option(self, name: str) -> Any:
        """An engine option by its field name, from the options object that declares it (Levers.budget names one)."""
        return getattr(getattr(self, OPTION_OF_FIELD[name]), name)


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
    # llama.cpp / Ollama --no-host beside a GPU: the host weights the CPU repacks (kept in CPU_REPACK, their matmuls
    # on the CPU), which the speed model reads (hardware/speed.py speed_plan); None otherwise or when not sized
    host_repacked: Repacked | None = None
    # sliding-window layers hold their window, not the context (llama.cpp's iSWA cache): (KV bytes per token of the
    # layers that hold the whole context, the window layers' KV bytes); None where every layer holds the context
    kv_split: tuple[int, int] | None = None
    # the weights' type as the runtime holds them where it is not the checkpoint's (transformers dequantizing an FP8
    # checkpoint to bf16: runtimes/transformers.py fp8_dequantized); the speed model reads it (verdict.speed)
    weights_as_run: str | None = None


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
    """What fixes may change for this planner (every planner declares its ``levers``)."""
    return runtime.levers


class Runtime(Protocol):
    name: str
    pools_kv: bool          # True when the runtime preallocates a KV pool from a memory budget (vLLM, SGLang)
    levers: Levers          # what fixes may change (fixes.py re-plans with each)

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings: ...

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation: ...

    def command(self, model: ModelSpec, settings: Settings) -> str: ...
