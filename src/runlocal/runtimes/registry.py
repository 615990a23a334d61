"""The engines runlocal plans, one entry each: the names users type, the planner, its options and the facts about it
that code outside runtimes/ asks (does it load GGUF files, does it span nodes, how does it spell --parallel …).

Code outside runtimes/ asks ``engine(name).ggml`` rather than comparing runtime names as strings
(tests/integration/test_lint.py keeps it so). A new engine is one entry here, a planner module, and an options
type in options.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .options import OPTION_ATTRS


@dataclass(frozen=True)
class Engine:
    name: str                           # as plans, commands and the JSON name it
    planner: str                        # "module:Class" in runtimes/ (get_runtime imports it when asked)
    aliases: tuple[str, ...]            # other names users type (matched in lower case)
    options: str                        # the Settings attribute holding its own options (options.OPTION_ATTRS)
    # --parallel not given is kept apart from 1 (Settings keeps PARALLEL_AUTO): llama-server's own default is -np -1,
    # "auto" (common/arg.cpp), 4 slots sharing one unified KV cache (tools/server/server.cpp); vLLM's unset
    # --max-num-seqs and SGLang's unset --max-running-requests are their own defaults (256/1024 profiled sequences,
    # a pool-sized request count), not 1. The other engines read an unset --parallel as 1, their default
    auto_parallel: bool = False
    # loads GGUF files and runs on a ggml backend: GGUF quant names, --backend, a .gguf planned as it is
    ggml: bool = False
    # llama-server's default --fit on moves layers to RAM until anything runs (common/fit.cpp), so "runs on this
    # device" pins every layer on the GPUs (choose.py)
    fit_offload: bool = False
    gpu_layers_flag: bool = False       # -ngl on its command line (Ollama takes num_gpu in a Modelfile instead)
    cpu_moe: bool = False               # llama-server --n-cpu-moe: routed experts of the first N layers in RAM
    server_environment: bool = False    # its server's environment sets what a request leaves unset (OLLAMA_*)
    pinned_llama_cpp: bool = False      # runs llama-server at its own pinned build (Ollama's LLAMA_CPP_VERSION)
    # across nodes: tensor parallel within a node, pipeline parallel over the nodes (vLLM's docs, "Distributed
    # inference and serving"); the others are planned on one node of up to base.GPUS_PER_NODE GPUs
    multi_node: bool = False
    # serves a Hub checkpoint as stored, or a published quantized one (data/published_checkpoints.json)
    hub_checkpoints: bool = False
    # takes quantization from config.json's quantization_config only (transformers quantizers/auto.py): an NVIDIA
    # ModelOpt checkpoint (hf_quant_config.json) loads as 16-bit
    quant_from_config_only: bool = False
    more_gpus: bool = True              # plans one model over several identical GPUs (fixes.py "more GPUs")
    # takes a share of every GPU by design at its default (vLLM: --gpu-memory-utilization, the current release's
    # default in versions.VLLM_UTILIZATION_DEFAULTS): verdict.tight_share does not call a plan tight for that alone
    reserves_budget: bool = False
    kv_auto: bool = False               # its default KV-cache type is "auto", the model's dtype
    # KV-cache types it accepts, where runlocal refuses the rest before planning (None: any known type is planned
    # and the engine's own refusal explained):
    #   llama.cpp: common/arg.cpp kv_cache_types; vLLM: vllm/config/cache.py CacheDType ("auto" and fp16 read as f16)
    cache_types: tuple[str, ...] | None = None
    # the devices it runs on: these kinds whatever their backends, and GPUs (kind gpu or unified) with one of these
    # backends; both empty: everywhere
    device_kinds: tuple[str, ...] = ()
    gpu_backends: tuple[str, ...] = ()
    speed_backend: str | None = None    # hardware/speed.py's constants for it on any GPU (None: the GPU's ggml backend)
    # why `check` refuses it on an Apple-silicon GPU (empty: it runs there, or runs_on says where it does not)
    not_on_apple: str = ""
    parallel_flag: str = ""             # its own name for the requests it runs at once, as a user sets it
    parallel_label: str = "Parallel requests"   # the same, as the web form labels the field
    # the request's engine-specific fields (request.CheckRequest) its planner reads; one of them set for an engine
    # that does not list it is refused (check.build_settings), never silently ignored. Fields no engine lists
    # (model, ctx, quant, KV types, parallel …) are common to all.
    own_options: tuple[str, ...] = ()

    @property
    def options_type(self) -> type:
        """The dataclass of its own options (runtimes/options.py), held in ``Settings.<options>``."""
        return OPTION_ATTRS[self.options]

    def runs_on(self, kind: str, backends: tuple[str, ...] | frozenset[str] | None) -> bool:
        """Whether it runs on a device of this kind with these backends (choose.runtime_runs_on)."""
        if not (self.device_kinds or self.gpu_backends):
            return True
        return kind in self.device_kinds or (kind in ("gpu", "unified") and bool(set(backends or ()) &
                                                                                set(self.gpu_backends)))


# llama-server's flags (common/arg.cpp)
_LLAMA_OPTIONS = ("backend", "batch", "ubatch", "flash_attn", "n_gpu_layers", "n_cpu_moe", "cpu_moe",
                  "override_tensor",
                  "kv_unified", "swa_full", "no_mmap", "no_kv_offload", "no_host", "fit", "tensor_split",
                  "no_mmproj")
# what a user can set for Ollama's runner (docs/modelfile.md: num_gpu, num_batch — both -b and -ub —, use_mmap;
# docs/faq.md: OLLAMA_FLASH_ATTENTION); the backend is the GPU's
_OLLAMA_OPTIONS = ("backend", "batch", "flash_attn", "n_gpu_layers", "no_mmap")
_SERVER_OPTIONS = ("max_num_batched_tokens", "tp", "pp", "enforce_eager")   # vLLM's names, SGLang's read the same
# swap_space: vLLM's up to v0.17.1 only — listed so another engine's plan refuses it by name; check refuses it for a
# later vLLM release (versions.vllm_swap_space)
_VLLM_OPTIONS = (*_SERVER_OPTIONS, "gpu_memory_utilization", "swap_space", "dp", "expert_parallel", "enable_lora",
                 "max_loras", "max_lora_rank", "cpu_kvcache_space")

# vLLM's macOS build: "On macOS the VLLM_TARGET_DEVICE is automatically set to cpu, which is currently the only
# supported device" (docs/getting_started/installation/cpu.apple.inc.md); the GPU path is the separate vllm-metal
# plugin over MLX (docs/getting_started/installation/gpu.apple.inc.md), whose memory is not vLLM's CUDA budget
_VLLM_ON_MAC = ("vLLM has no Metal backend: on macOS it builds for the CPU only (VLLM_TARGET_DEVICE=cpu, docs: "
                "installation/cpu, Apple silicon; --gpu none --ram N plans that), its Apple GPU path is the separate "
                "vllm-metal plugin over MLX")
# SGLang on a Mac: a from-source MLX / torch.mps backend (docs.sglang.io hardware-platforms/apple_metal, roadmap
# sgl-project/sglang#19137), not the CUDA memory pool (mem_fraction_static) runtimes/sglang.py models
_SGLANG_ON_MAC = ("SGLang's Apple-silicon backend is a from-source MLX build (SGLANG_USE_MLX=1, docs: "
                  "hardware-platforms/apple_metal) whose memory runlocal does not model; its planner models the CUDA/ROCm "
                  "pool")

_LLAMA_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")

ENGINES: tuple[Engine, ...] = (
    Engine("llama.cpp", "llamacpp:LlamaCpp", ("llamacpp", "llama-cpp", "llama-server", "llama_cpp"), "llamacpp",
           auto_parallel=True, ggml=True, fit_offload=True, gpu_layers_flag=True, cpu_moe=True,
           cache_types=_LLAMA_CACHE_TYPES, parallel_flag="--parallel ", own_options=_LLAMA_OPTIONS),
    Engine("vllm", "vllm:VLLM", (), "vllm", hub_checkpoints=True, multi_node=True, kv_auto=True,
           reserves_budget=True, auto_parallel=True,
           cache_types=("f16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2"), gpu_backends=("cuda", "rocm"),
           speed_backend="vllm", parallel_flag="--max-num-seqs ", parallel_label="Max concurrent sequences",
           own_options=_VLLM_OPTIONS, not_on_apple=_VLLM_ON_MAC),
    Engine("ollama", "ollama:Ollama", (), "llamacpp", ggml=True, server_environment=True, pinned_llama_cpp=True, more_gpus=False,
           parallel_flag="OLLAMA_NUM_PARALLEL=", parallel_label="OLLAMA_NUM_PARALLEL", own_options=_OLLAMA_OPTIONS),
    Engine("sglang", "sglang:SGLang", (), "sglang", kv_auto=True, hub_checkpoints=True, gpu_backends=("cuda", "rocm"),
           auto_parallel=True,
           speed_backend="sglang", parallel_flag="--max-running-requests ", parallel_label="Max running requests",
           own_options=(*_SERVER_OPTIONS, "mem_fraction_static"), not_on_apple=_SGLANG_ON_MAC),
    Engine("transformers", "transformers:Transformers", ("hf", "huggingface"), "transformers",
           quant_from_config_only=True,
           device_kinds=("apple", "cpu"), gpu_backends=("cuda", "rocm"), parallel_flag="batch size ",
           parallel_label="Batch size", own_options=("max_new_tokens", "attn_implementation", "device_map",
                                                         "accelerate")),
    Engine("mlx", "mlx:MLX", ("mlx-lm", "mlx_lm"), "mlx", more_gpus=False, device_kinds=("apple",),
           speed_backend="mlx", parallel_flag="--decode-concurrency "),
)
# every name users type (lower case) → its engine, in the order the aliases are listed
BY_NAME: dict[str, Engine] = {n: e for e in ENGINES for n in (e.name, *e.aliases)}


def find_engine(name: str) -> Engine | None:
    """The engine a name (any alias, any case, without ==VERSION) means; None when it is none of them."""
    return BY_NAME.get(name.strip().lower())


def engine(name: str) -> Engine:
    """The engine a runtime name means (a planner's ``name``, ``Settings.runtime``, or an alias users type)."""
    found = find_engine(name)
    if found is None:
        raise InputError(f"runtime: unknown runtime '{name}' (expected one of "
                         f"{', '.join(e.name for e in ENGINES)}, optionally ==VERSION)")
    return found
