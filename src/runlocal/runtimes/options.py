"""Each engine's own settings: one typed options object per engine, held by ``Settings`` beside the common fields.

``Settings`` (runtimes/base.py) carries the fields every engine reads (runtime, context, quant, KV-cache types,
parallel sequences, tensor / pipeline ranks) and one object of each type below. A planner reads only its own
(``settings.llamacpp`` in llamacpp.py and ollama.py, ``settings.vllm`` in vllm.py …; tests/integration/test_lint.py
checks it); ``check.build_settings`` builds all of them from the request, in one place. Field names are unique
across the types, so ``Settings.with_(n_gpu_layers=…)`` knows which object a change goes to.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal


@dataclass(frozen=True)
class LlamaCppOptions:
    """llama-server's flags (common/arg.cpp); Ollama passes the same ones to the llama-server it starts
    (llm/llama_server.go: -b/-ub from num_batch, -ngl from num_gpu, --flash-attn from OLLAMA_FLASH_ATTENTION)."""

    batch: int | None = None                    # -b: logical batch (None: the engine's default)
    ubatch: int | None = None                   # -ub: physical batch
    flash_attn: Literal["on", "off", "auto"] = "auto"
    n_gpu_layers: int | None = None             # -ngl; None → all that the runtime offloads by default
    n_cpu_moe: int = 0                          # --n-cpu-moe N: the experts of the first N layers on the CPU
    # --cpu-moe: every layer's experts on the CPU — planned as --n-cpu-moe <all layers> (the same tensors: check._inputs
    # sets n_cpu_moe once the model is known); kept so the command says --cpu-moe as the user did
    cpu_moe: bool = False
    # -ot / --override-tensor: (regex, buffer type: CPU, CUDA0 …) in order, the first match wins
    override_tensor: tuple[tuple[str, str], ...] = ()
    kv_unified: bool = False                    # --kv-unified: one KV stream shared by all sequences
    swa_full: bool = False                      # --swa-full: sliding-window layers keep the full context
    mmap: bool = True                           # weights memory-mapped from the file (--no-mmap reads them)
    kv_offload: bool = True                     # --no-kv-offload / -nkvo (False): KV and recurrent state in RAM
    no_host: bool = False                       # --no-host: CPU weights the CPU repacks stay on it (ggml/repack.py)
    fit: bool = True                            # --fit on|off: fit an unset context and -ngl to free memory
    tensor_split: tuple[float, ...] = ()        # -ts 3,1: the GPUs' shares of the layers (default: free memory)
    mmproj: bool = True                         # -hf loads the repo's projector (--no-mmproj: none; llamacpp_mmproj.py)
    # Ollama: the Hub name the user gave (hf.co/<repo>:<quant>, runtimes/pull_names.py), pulled as named rather than
    # the library tag of the same model and type (another converter, chat template, no projector); None: the name
    # published.ollama_model picks
    ollama_pull: str | None = None


@dataclass(frozen=True)
class VLLMOptions:
    """`vllm serve`'s engine arguments (vllm/engine/arg_utils.py) that change memory."""

    gpu_memory_utilization: float | None = None     # None: vLLM's 0.9
    max_num_batched_tokens: int | None = None       # None: the default for the GPU (vllm.py batch_defaults)
    enforce_eager: bool = False                     # no CUDA graphs captured
    # --swap-space: GiB of CPU swap per GPU (CacheConfig's 4), vLLM up to v0.17.1 only (PR #36216 removed it): a
    # later release's plan neither reads it nor prints it, and check refuses it there (_refuse_removed_swap_space)
    swap_space: float = 4.0
    enable_lora: bool = False                       # --enable-lora: LoRA slots preallocated (runtimes/vllm_lora.py)
    max_loras: int = 1                              # --max-loras
    max_lora_rank: int = 16                         # --max-lora-rank
    dp: int = 1                                     # --data-parallel-size: engine replicas (runtimes/vllm_parallel.py)
    expert_parallel: bool = False                   # --enable-expert-parallel: whole experts per rank
    # the CPU backend's KV cache, whole GiB (VLLM_CPU_KVCACHE_SPACE, vllm/envs.py); None: unset (vllm.py: 4 GiB)
    cpu_kvcache_space: int | None = None


@dataclass(frozen=True)
class SGLangOptions:
    """`python -m sglang.launch_server`'s arguments (python/sglang/srt/server_args.py) that change memory;
    the request's --max-num-batched-tokens and --enforce-eager are SGLang's --chunked-prefill-size and
    --disable-cuda-graph."""

    mem_fraction_static: float | None = None        # None: the default for the GPU (sglang.py)
    chunked_prefill_size: int | None = None         # None: the default for the GPU
    disable_cuda_graph: bool = False


@dataclass(frozen=True)
class TransformersOptions:
    """What a transformers ``generate()`` run is given (the model's ``from_pretrained`` and the call)."""

    max_new_tokens: int | None = None               # the prompt is ctx − this (None: all of ctx)
    attn_implementation: str | None = None          # "sdpa" (its default) or "eager"
    device_map: str = "auto"                        # "auto" (accelerate places) or "cuda" (all on GPU 0)
    accelerate: str | None = None                   # the accelerate release (None: the least transformers requires)


@dataclass(frozen=True)
class MLXOptions:
    """mlx_lm's settings runlocal plans are all common ones (context, --kv-bits from the KV-cache type,
    --decode-concurrency from parallel); the planner's own switches (max_kv_size) are attributes of ``MLX``."""


EngineOptions = LlamaCppOptions | VLLMOptions | SGLangOptions | TransformersOptions | MLXOptions
# the Settings attribute each options type is held in
OPTION_ATTRS: dict[str, type] = {"llamacpp": LlamaCppOptions, "vllm": VLLMOptions, "sglang": SGLangOptions,
                                 "transformers": TransformersOptions, "mlx": MLXOptions}
# field name → the Settings attribute of the options object that declares it (names are unique across types)
OPTION_OF_FIELD: dict[str, str] = {f.name: attr for attr, cls in OPTION_ATTRS.items() for f in fields(cls)}
