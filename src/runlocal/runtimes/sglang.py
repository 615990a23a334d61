"""SGLang: a static budget (weights + KV pool) as a fraction of the GPU, the pool sized from what is left.

Modelled on SGLang 0.5.23 (the PyPI wheel ``sglang-0.5.23``; sources under python/sglang/srt/):
- arg_groups/memory_hook.py handle_gpu_memory_settings: chunked_prefill_size and the decode CUDA-graph
  max batch size by GPU memory (nvidia-smi total, in MiB, utils/common.py get_nvgpu_memory_capacity),
  then mem_fraction_static = round((gpu_mem − reserved_mem) / gpu_mem, 3) where
  reserved_mem = 512 + 1.5 × max(chunked_prefill_size, 2048) + tp·pp/8 × 1024 + graph reserve MiB,
  at least 10 GiB on GPUs above 60 GiB.
- mem_cache/kv_cache_configurator.py _profile_available_bytes: KV budget = free memory after the
  weights − pre_model_load_memory × (1 − mem_fraction_static), pre_model_load_memory being the free
  memory measured before the weights load (distributed/bootstrap.py).
- model_executor/pool_configurator.py: max_total_num_tokens = budget // cell_size (bytes per token over
  all layers: KV heads per GPU × (head_dim + v_head_dim) × dtype size; MLA stores one latent of
  kv_lora_rank + qk_rope_head_dim); hybrid sliding-window models split it into a full pool and an SWA
  pool of swa_full_tokens_ratio (0.8) of its tokens.
- managers/tp_worker.py get_worker_info: a pool smaller than --context-length only logs a warning;
  the server starts and serves requests up to max_req_len = min(context_len − 1, max_total_num_tokens − 1)
  (inputs below max_req_len − 5, managers/utils.py validate_input_length), refusing or truncating longer ones.
  With no --context-length asked, context_len is config.json's, so such a server is the defaults running a
  shorter context (``served_context``), as llama.cpp's --fit shortens an unset -c: "tight", not a failure.
  An asked --context-length the pool cannot hold is a request that does not run (verdict.rejects_long_requests).
  vLLM differs (read in the vllm 0.11.0 wheel): v1/core/kv_cache_utils.py check_enough_kv_cache_memory raises
  "To serve at least one request with the models's max seq len …" when one request of model_config.max_model_len
  does not fit, and config/model.py fills an unasked max_model_len from config.json (get_and_verify_max_len), so
  it refuses to start whether the length was asked or not.

``SGLang.allocate`` computes typed results (``_Budget``, ``_Pool``, ``_Outside``) and ``_explain`` turns them
into the --explain steps; the figures come only from the former.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from ..units import GiB, MiB
from .arch_support import OTHER_RUNTIMES
from .base import GPUS_PER_NODE, PARALLEL_AUTO, Allocation, DeviceMemory, Levers, Settings, Step, Target
from .context_limit import sglang_context_refusal, sglang_default_note, sglang_planned_context_length
from .published import catalog_vision_config, gpu_gfx_target, kernel_check, serve_path
from .sglang_versions import (
    LLAMA2_PREFILL_CAP,
    VLM_BASELINE,
    SGLangRules,
    old_fraction,
    sglang_rules,
    tier_defaults,
    vlm_factor,
)
from .tensor_parallel import head_split_refusal

SGLANG_REF = "sglang 0.5.23"
# The CUDA context a torch process holds before pre_model_load_memory is measured, and the cuBLAS workspace it
# adds later (out of the non-static slack): 621 and 118 MiB measured with nvidia-smi on an H100 (torch 2.11,
# CUDA 13; measurements/transformers). Not in SGLang's code.
CUDA_CONTEXT = 620 * MiB
CUBLAS_WORKSPACE = 120 * MiB
# With TP or PP > 1, init_torch_distributed (NCCL communicators, custom all-reduce buffers) takes memory before
# pre_model_load_memory is measured; SGLang logs it as "Init torch distributed ends. mem usage=X GB": 0.00 at
# TP 1, 0.16 GB at PP 4 (sgl-project/sglang PR #12362), 1.77–2.01 GB per rank at TP 8 on H200 (PR #11716, median
# 2.01). The TP figure is taken as it is for every TP size (a TP 4 H100 log, vllm-project/vllm#21348, implies
# about 1.7 GiB: benchmarks/accuracy_sglang.py).
DIST_INIT_TP = int(2.01 * GiB)
DIST_INIT_PP = int(0.16 * GiB)
SWA_FULL_TOKENS_RATIO = 0.8         # arg_groups/fields/schedule.py swa_full_tokens_ratio fallback
MAX_PREFILL_TOKENS = 16384          # arg_groups/fields/schedule.py max_prefill_tokens
PAGE_SIZE = 1                       # arg_groups/overrides.py _page_size_default on CUDA
REQ_TO_TOKEN_EXTRA = 4              # kv_cache_configurator.py extra_max_context_len = 4 (no speculative decoding)
# --kv-cache-dtype choices (arg_groups/fields/model.py) → bytes per element; "auto" = the model dtype.
KV_DTYPES = {"auto": 2, "bf16": 2, "bfloat16": 2, "f16": 2, "fp16": 2, "float16": 2,
             "fp8_e5m2": 1, "fp8_e4m3": 1, "fp8": 1}


def gpu_memory_defaults(gpu_mem_mib: float, tp: int) -> tuple[int, int]:
    """arg_groups/memory_hook.py handle_gpu_memory_settings: (chunked_prefill_size, decode CUDA-graph max_bs)."""
    if gpu_mem_mib < 20 * 1024:      # T4, 4080
        return 2048, 8
    if gpu_mem_mib < 35 * 1024:      # A10, 4090, 5090
        return 4096, 48 if tp < 4 else 160
    if gpu_mem_mib < 60 * 1024:      # A100 40GB, L40
        return 4096, 32 if tp < 4 else 160
    if gpu_mem_mib < 90 * 1024:      # H100, A100 80GB
        return 8192, 256 if tp < 4 else 512
    if gpu_mem_mib < 160 * 1024:     # H20, H200
        return 8192, 256 if tp < 4 else 512
    return 16384, 512                # B200, MI300


def prefill_graph_sizes(max_bs: int) -> list[int]:
    """arg_groups/cuda_graph_hook.py generate_prefill_cuda_graph_batch_sizes (token buckets)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_bs + 1, 512)))
    return [n for n in sizes if n <= max_bs]


def graph_reserve_mib(decode_max_bs: int, chunked: int, mla: bool, prefill: bool = True,
                      prefill_cap: int | None = None) -> float:
    """arg_groups/memory_hook.py reserve_for_graph_mb: decode graphs (FULL by default) 2 MiB per max_bs;
    prefill graphs (BREAKABLE by default on CUDA, cuda_graph_config.py default_prefill_backend) 8 MiB per
    captured size, or 1.5 GiB with an MLA backend. ``prefill`` False: a release before 0.5.11, whose prefill
    (piecewise) graphs were off by default (runtimes/sglang_versions.py). ``prefill_cap``: the largest prefill size
    a release clamps to (``prefill_graph_cap``: --context-length, a "llama-2" path's 4096); None: no clamp."""
    if not prefill:
        return decode_max_bs * 2
    prefill_max_bs = min(8192, chunked) if mla else chunked
    if prefill_cap is not None:
        prefill_max_bs = min(prefill_max_bs, prefill_cap)
    return decode_max_bs * 2 + (1.5 * 1024 if mla else len(prefill_graph_sizes(prefill_max_bs)) * 8)


def reserved_mem_mib(gpu_mem_mib: float, chunked: int, decode_max_bs: int, tp: int, pp: int, mla: bool,
                     prefill: bool = True, prefill_cap: int | None = None) -> float:
    """arg_groups/memory_hook.py: reserved_mem for activations, CUDA graphs and parallel slack (MiB); the same sum
    from 0.5.3 (server_args.py:639 there), the prefill graphs from 0.5.11."""
    activation_tokens = max(chunked, 2048) if chunked > 0 else max(MAX_PREFILL_TOKENS, 2048)
    reserved = (512 + activation_tokens * 1.5 + tp * pp / 8 * 1024
                + graph_reserve_mib(decode_max_bs, chunked, mla, prefill, prefill_cap))
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return reserved


def default_mem_fraction_static(gpu_mem_mib: float, chunked: int, decode_max_bs: int, tp: int, pp: int,
                                mla: bool, rules: SGLangRules | None = None, context: int | None = None,
                                model_path: str = "", amd: bool = False, architecture: str = "",
                                vlm: tuple[float, str] | None = None) -> float:
    """mem_fraction_static when not given: 0.5.23's rule, or the release ``rules`` names (sglang_versions.py);
    ``context``: the --context-length the command passes (0.5.13 – 0.5.16 clamp the prefill graphs to it);
    ``model_path``: the --model-path it passes (one naming "llama-2" caps them at 4096 from 0.5.11);
    ``architecture``: config.json's class (a multimodal or blacklisted one turns the prefill graphs off, by release);
    ``vlm``: a vision model's reduction (factor, its formula: ``vlm_reduction``)."""
    return fraction_and_formula(gpu_mem_mib, chunked, decode_max_bs, tp, pp, mla, rules, context, model_path, amd,
                                architecture, vlm)[0]


def vlm_reduction(model: ModelSpec, rules: SGLangRules | None) -> tuple[float, str] | None:
    """(factor, formula) SGLang multiplies an unasked mem_fraction_static by for a vision model at this release
    (sglang_versions.VLM_FRACTION_READ; 0.4.9's fixed × 0.90, VLM_UNASKED_0_4_9), or None: before 0.4.9, a class
    not multimodal there, no vision_config from 0.4.10."""
    fixed = (rules or sglang_rules(None)).vlm_unasked_factor(model.architecture)
    if fixed:       # 0.4.9: ServerArgs, an unasked fraction × 0.90 for any multimodal model, no vision_config read
        return fixed[0], f"× {fixed[0]} for a multimodal model, {fixed[1]} (ServerArgs, an unasked fraction only)"
    source = (rules or sglang_rules(None)).vlm_fraction_source(model.architecture)
    vc = catalog_vision_config(model) if source else None
    if vc is None:
        return None
    # getattr(vision_config, "num_hidden_layers", 24) / ("hidden_size", 1024): a "depth" key is not read
    layers, hidden = int(vc.get("num_hidden_layers", VLM_BASELINE[0])), int(vc.get("hidden_size", VLM_BASELINE[1]))
    unread = f"; depth {vc['depth']} not read: no num_hidden_layers → the default 24" if (
        "num_hidden_layers" not in vc and "depth" in vc) else ""
    factor = vlm_factor(layers, hidden)
    return factor, (f"× {factor:.4f} for the vision tower = 0.95 × clamp(1 − 0.1 × ({layers} × {hidden}² / "
                    f"(24 × 1024²) − 1), 0.8, 1.05), {source}{unread}")


def prefill_graphs(rules: SGLangRules | None, amd: bool, pp: int, mla: bool,
                   architecture: str = "") -> tuple[bool, str]:
    """(the prefill CUDA graphs are captured and reserved, why not): off by default before 0.5.11, and off where
    the release turns them off itself — an AMD GPU, pp_size > 1, an MLA model, a multimodal model or a
    piecewise-blacklisted class, by release (sglang_versions.GRAPHS_OFF_*, PREFILL_ARCH_RULES); None: 0.5.23's rules."""
    if rules is not None and not rules.prefill_graphs:
        return False, "off by default before 0.5.11"
    off = (rules or sglang_rules(None)).prefill_graphs_off(amd, pp, mla, architecture)
    return off is None, off or ""


def llama2_capped(rules: SGLangRules | None, model_path: str) -> bool:
    """The release caps the prefill graphs at 4096 for this --model-path (substring "llama-2" of its lower case,
    sglang_versions.LLAMA2_CAP_READ): every release that captures prefill graphs by default."""
    return "llama-2" in model_path.lower() and (rules is None or rules.prefill_graphs)


def prefill_graph_cap(rules: SGLangRules | None, context: int | None, model_path: str = "") -> int | None:
    """The largest prefill graph size the release clamps to, else None: the --context-length (0.5.13 – 0.5.16)
    and 4096 for a "llama-2" model path (0.5.11 on), the smaller where both apply."""
    caps = [context] if context and rules is not None and rules.prefill_graphs_capped_at_context else []
    caps += [LLAMA2_PREFILL_CAP] if llama2_capped(rules, model_path) else []
    return min(caps) if caps else None


def fraction_and_formula(gpu_mem_mib: float, chunked: int, decode_max_bs: int, tp: int, pp: int, mla: bool,
                         rules: SGLangRules | None, context: int | None = None,
                         model_path: str = "", amd: bool = False, architecture: str = "",
                         vlm: tuple[float, str] | None = None) -> tuple[float, str]:
    """(mem_fraction_static, the formula --explain shows) at the current release or the one ``rules`` names; a
    vision model's reduction ``vlm`` multiplies it, not rounded after (adjust_mem_fraction_for_vlm)."""
    frac, formula = _text_model_fraction(gpu_mem_mib, chunked, decode_max_bs, tp, pp, mla, rules, context, model_path,
                                         amd, architecture)
    return (frac * vlm[0], f"{frac} {vlm[1]}; {frac} from {formula}") if vlm else (frac, formula)


def _text_model_fraction(gpu_mem_mib: float, chunked: int, decode_max_bs: int, tp: int, pp: int, mla: bool,
                         rules: SGLangRules | None, context: int | None, model_path: str, amd: bool,
                         architecture: str) -> tuple[float, str]:
    if rules is not None and rules.fraction not in ("activation", "graphs"):
        return old_fraction(rules, gpu_mem_mib, tp, pp)
    prefill, off = prefill_graphs(rules, amd, pp, mla, architecture)
    cap = prefill_graph_cap(rules, context, model_path)
    reserved = reserved_mem_mib(gpu_mem_mib, chunked, decode_max_bs, tp, pp, mla, prefill, cap)
    graph_mib = graph_reserve_mib(decode_max_bs, chunked, mla, prefill, cap)
    capped = prefill and cap is not None and not mla and cap < chunked
    clamp = (f"{cap:,} for a model path naming 'llama-2', "
             + (rules.llama2_cap_source or "" if rules else f"{SGLANG_REF} arg_groups/memory_hook.py:260")
             if cap == LLAMA2_PREFILL_CAP and llama2_capped(rules, model_path)
             else f"--context-length {cap or 0:,}, {rules.ref if rules else SGLANG_REF}")
    formula = (f"(GPU {gpu_mem_mib:,.0f} MiB − reserved {reserved:,.0f} MiB) / GPU; reserved = 512 + 1.5 × max(chunked "
               f"{chunked}, 2048) + TP·PP/8 × 1024 + graphs {graph_mib:,.0f}"
               + ("" if prefill else " (decode graphs: 2 × max bs" + (f"; no prefill graphs, {off})" if off and (
                   rules is None or rules.prefill_graphs) else ")"))
               + (f" (prefill graph sizes up to {clamp})" if capped else "")
               + (" (≥ 10 GiB above 60 GiB)" if gpu_mem_mib > 60 * 1024 else ""))
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3), formula


def _amd(gpus: list[Target]) -> bool:
    """An AMD (ROCm) GPU among those SGLang uses: the catalog's gfx target (published.gpu_gfx_target)."""
    return any(gpu_gfx_target(g.name) for g in gpus)


def _nvidia(target: Target) -> bool:
    """An NVIDIA (CUDA) device: the catalog's vendor, else the name nvidia-smi reports ("NVIDIA GB10 #0")."""
    from ..hardware.catalog import load_devices

    name = re.sub(r" #\d+$", "", target.name)
    vendor = next((d.vendor for d in load_devices() if d.name == name), None)
    return vendor == "nvidia" if vendor else name.upper().startswith("NVIDIA")


# The ROCm targets sgl-kernel is built for. sgl-kernel/setup_rocm.py stops on any other auto-detected chip:
#     if amdgpu_target not in ["gfx942", "gfx950"]:
#         print(f"Warning: Unsupported GPU architecture detected '{amdgpu_target}'. Expected 'gfx942' or 'gfx950'.")
#         sys.exit(1)
# (sgl-project/sglang 01b582cb; before PR #27535 an AMDGPU_TARGET set by hand was overwritten by the detected chip and
# stopped the same way — issue #27519; from it an explicit AMDGPU_TARGET builds with "untested upstream — use at your
# own risk"); the published sglang-kernel ROCm wheels are built with AMDGPU_TARGET="gfx942;gfx950"
# (3rdparty/amd/wheel/sgl-kernel/build_rocm.sh), and the docs' AMD page (docs/platforms/amd_gpu.md) covers MI300X.
# SGLang imports sgl_kernel's ops on ROCm (0.5.19 layers/activation.py:109 `elif _is_hip: from sgl_kernel import …`),
# so without it the server does not start. RDNA support is an open request (issue #30599; PR #37398 for gfx1100).
SGL_KERNEL_ROCM_TARGETS = ("gfx942", "gfx950")


# The runtimes runlocal plans on such a device instead: llama.cpp's HIP and Vulkan builds and Ollama's ROCm / Vulkan
# runners (RDNA cards and APUs), and vLLM where its ROCm requirements list the chip — "GPU: MI200s (gfx90a), MI300
# (gfx942), MI350 (gfx950), Radeon RX 7900 series (gfx1100/1101), Radeon RX 9000 series (gfx1200/1201), Ryzen AI MAX /
# AI 300 Series (gfx1151/1150)" (vllm docs/getting_started/installation/gpu.rocm.inc.md); on a CPU, llama.cpp, Ollama,
# vLLM's CPU build and transformers
VLLM_ROCM_TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1200", "gfx1201", "gfx1151", "gfx1150")
ON_AMD = "llama.cpp's HIP or Vulkan build (--runtime llama.cpp), Ollama (--runtime ollama)"
ON_AMD_VLLM = "vLLM on ROCm (--runtime vllm plans it)"
ON_CPU = ("llama.cpp (--runtime llama.cpp), Ollama (--runtime ollama), vLLM's CPU build (--runtime vllm), transformers "
          "(--runtime transformers)")


def _rocm_target_refusal(devices: list[Target]) -> str | None:
    """SGLang's refusal of an AMD GPU whose ROCm target sgl-kernel is not built for (an RX 7900 XTX, an APU), or None."""
    for device in devices:
        gfx = gpu_gfx_target(device.name)
        if gfx and gfx not in SGL_KERNEL_ROCM_TARGETS:
            return (f"SGLang's ROCm kernels (sgl-kernel) build for gfx942 / gfx950 (MI300 / MI350) only; "
                    f"{device.name} is {gfx}: setup_rocm.py stops with \"Warning: Unsupported GPU architecture detected "
                    f"'{gfx}'. Expected 'gfx942' or 'gfx950'.\" and the published ROCm wheels are built for those two "
                    "(a hand-set AMDGPU_TARGET builds it, \"untested upstream\"; RDNA support: sglang issue #30599). "
                    f"{OTHER_RUNTIMES} on {gfx}: "
                    + (f"{ON_AMD_VLLM}, " if gfx in VLLM_ROCM_TARGETS else "") + ON_AMD)
    return None


def _no_gpu_refusal(device: Target) -> str:
    """Why SGLang does not start on a device that is neither a CUDA GPU nor a supported ROCm one."""
    return _rocm_target_refusal([device]) or f"SGLang needs a CUDA or ROCm GPU; none was given. {OTHER_RUNTIMES}: {ON_CPU}"


def _kv_dtype(name: str) -> tuple[str, int] | None:
    key = name.strip().lower()
    if key in KV_DTYPES:
        return ("fp8_e4m3" if key == "fp8" else key), KV_DTYPES[key]
    return None


@dataclass(frozen=True)
class _Budget:
    """mem_fraction_static of the memory free before the weights load, on the smallest GPU
    (kv_cache_configurator.py _profile_available_bytes), and what it is made of."""

    gpu_mem_mib: float          # nvidia-smi memory.total, MiB (get_nvgpu_memory_capacity)
    mla: bool
    chunked: int                # chunked_prefill_size
    decode_bs: int              # the decode CUDA graphs' max batch size
    tp: int
    pp: int
    frac: float                 # mem_fraction_static
    dist: int                   # init_torch_distributed, before pre_model_load_memory is measured
    free: int                   # the GPU's free memory
    pre: int                    # pre_model_load_memory: free − CUDA context − dist
    weights: int                # per GPU
    rules: SGLangRules | None = None    # a release asked with sglang==X; None: 0.5.23
    model_path: str = ""                # the command's --model-path (a "llama-2" one caps the prefill graphs)
    amd: bool = False                   # an AMD (ROCm) GPU: no prefill graphs in any release
    architecture: str = ""              # config.json's class: multimodal ones lose the prefill graphs, by release
    vlm: tuple[float, str] | None = None    # a vision model's fraction reduction (vlm_reduction)
    runner: tuple[float, str] | None = None     # up to 0.4.8: ModelRunner's fixed multimodal factor on any fraction

    @property
    def prefill(self) -> bool:
        """The prefill CUDA graphs are captured and reserved (prefill_graphs)."""
        return prefill_graphs(self.rules, self.amd, self.pp, self.mla, self.architecture)[0]

    @property
    def ref(self) -> str:
        return self.rules.ref if self.rules else SGLANG_REF

    @property
    def budget(self) -> int:
        return int(self.pre * self.frac)

    @property
    def rest(self) -> int:
        """What the KV pool gets: the budget less the weights (negative: nothing)."""
        return self.budget - self.weights


@dataclass(frozen=True)
class _Pool:
    """The KV pool (model_executor/pool_configurator.py): bytes per token over the first stage's layers, and
    the tokens that fit; hybrid sliding-window models get an SWA pool of SWA_FULL_TOKENS_RATIO of its tokens."""

    dtype: str
    n_layers: int
    full_cell: int              # B/token over the full (and MLA) layers
    swa_cell: int               # B/token over the sliding-window layers
    rest: int                   # the budget left for it

    @property
    def hybrid(self) -> bool:
        return bool(self.swa_cell and self.full_cell)

    @property
    def cell(self) -> float:
        return (self.full_cell + SWA_FULL_TOKENS_RATIO * self.swa_cell if self.hybrid
                else self.full_cell + self.swa_cell)

    @property
    def tokens(self) -> int:
        return int(max(0, self.rest) // self.cell) // PAGE_SIZE * PAGE_SIZE if self.cell else 0

    @property
    def swa_tokens(self) -> int:
        return int(self.tokens * SWA_FULL_TOKENS_RATIO) // PAGE_SIZE * PAGE_SIZE if self.hybrid else 0

    @property
    def kv_bytes(self) -> int:
        return (self.tokens * self.full_cell + self.swa_tokens * self.swa_cell if self.hybrid
                else self.tokens * int(self.cell))


@dataclass(frozen=True)
class _Outside:
    """What lives outside the static budget: the request-to-token table, one prefill chunk's activations and
    the CUDA graphs."""

    max_reqs: int
    req_to_token: int
    intermediate: int
    activation: int
    graphs: int
    prefill_tokens: int             # one prefill pass: the chunk, or the whole prompt where chunked prefill is off
    chunk_off: str | None = None    # where the release turns chunked prefill off for this model (chunked_prefill_off)


def _kv_dtype_of(s: Settings) -> tuple[tuple[str, int], str | None]:
    """(the KV dtype and its bytes per element, a refusal when K and V differ or the type is not SGLang's)."""
    kd = _kv_dtype(s.cache_type_k)
    if kd is None or (s.cache_type_v != s.cache_type_k and _kv_dtype(s.cache_type_v) != kd):
        bad = s.cache_type_k if kd is None else s.cache_type_v
        return kd or ("auto", 2), (f"--kv-cache-dtype {bad}: SGLang takes one dtype for K and V "
                                   f"(auto, bf16, fp8_e5m2, fp8_e4m3)")
    return kd, None


def _kv_pool(model: ModelSpec, kv_dtype: tuple[str, int], tp: int, pp: int, rest: int) -> _Pool:
    layers = model.attention_layers
    layers = layers[: -(-len(layers) // pp)] if pp > 1 else layers
    full_cell = swa_cell = 0
    for a in layers:
        if a.kind == "mla":
            per = a.k_dim * kv_dtype[1]  # calculate_mla_kv_cache_dim: kv_lora_rank + qk_rope_head_dim, not split by TP
        else:
            per = max(1, a.n_kv_heads // tp) * (a.k_dim + a.v_dim) * kv_dtype[1]   # ModelConfig.get_num_kv_heads
        if a.kind == "sliding":
            swa_cell += per
        else:
            full_cell += per
    return _Pool(kv_dtype[0], len(layers), full_cell, swa_cell, rest)


def _refusal(b: _Budget, pool: _Pool) -> str | None:
    """SGLang's own refusals at start-up: the weights do not load, or nothing is left for the pool."""
    if b.weights > b.pre:
        return (f"weights per GPU ({b.weights / GiB:.2f} GiB) exceed the free memory ({b.pre / GiB:.2f} GiB): "
                "loading fails with CUDA out of memory")
    if b.rest <= 0:
        minimum = 1 - (b.pre - b.weights) / b.pre if b.pre else 1.0
        return (f"Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={b.frac}. "
                f"Raise --mem-fraction-static above {math.ceil(minimum * 1000) / 1000:.3f}")
    if pool.tokens <= 0:
        return ("Not enough memory. Please try to increase --mem-fraction-static. "
                f"Current value: mem_fraction_static={b.frac}")
    return None


def balance_refusal(gpus: list[Target], tp: int) -> str | None:
    """SGLang's tensor-parallel balance check (python/sglang/srt/model_executor/model_runner.py, init_torch_distributed,
    0.4.x to 0.5.x alike): with tp_size > 1 every rank compares the least free memory over all ranks with its own and
    stops where min < 0.9 × its own, so cards of different sizes are refused even when nothing else runs on them. The
    free memory is the card less its CUDA context and the distributed init, as get_available_gpu_memory sees it."""
    if tp <= 1 or len(gpus) < 2:
        return None
    # per rank, not per card name: two cards of one name with different --vram differ (review20b finding 3)
    free = [max(0, g.capacity - CUDA_CONTEXT - DIST_INIT_TP) for g in gpus]
    least, most = free.index(min(free)), free.index(max(free))
    if free[least] >= 0.9 * free[most]:
        return None
    return ("The memory capacity is unbalanced. Some GPUs may be occupied by other processes. (SGLang stops at "
            f"start-up: rank {least} ({gpus[least].name}) has {free[least] / GiB:.2f} GiB free, under 0.9 × the "
            f"{free[most] / GiB:.2f} GiB of rank {most} ({gpus[most].name}).) Use GPUs of one size, or let SGLang warn "
            "and go on with every rank sized by the smallest card: "
            "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 (SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK=1 in older releases)")


def _outside_budget(model: ModelSpec, s: Settings, b: _Budget, tokens: int) -> _Outside:
    assert s.ctx is not None                # set by defaults()
    if s.parallel != PARALLEL_AUTO:
        max_reqs = min(s.parallel, max(1, tokens // 2))
    else:
        # kv_cache_configurator.py resolve_max_num_reqs
        max_reqs = min(max(min(int(tokens / s.ctx * 512) if s.ctx else 0, 4096), 2048), max(1, tokens // 2))
    inter = model.intermediate_size or 4 * model.hidden_size
    # chunked prefill off for this class (Mllama …, sglang_versions.CHUNKED_OFF_READ): the first request is prefilled
    # whole, the batch bounded by max(max_prefill_tokens, --context-length) and by the KV pool it is written to; the
    # fraction above kept the tier's chunk
    chunk_off = (b.rules or sglang_rules(None)).chunked_prefill_off(b.architecture)
    tokens_per_pass = min(max(s.ctx, MAX_PREFILL_TOKENS), tokens) if chunk_off else b.chunked
    # one prefill pass through a layer: hidden-sized tensors (input, residual, normed, output) and the MLP's
    # fused gate_up output + its activation (3 × intermediate / TP), bf16; logits only for last tokens
    return _Outside(max_reqs=max_reqs, req_to_token=(max_reqs + 1) * (s.ctx + REQ_TO_TOKEN_EXTRA) * 4,
                    intermediate=inter, activation=tokens_per_pass * (4 * model.hidden_size + 3 * inter // b.tp) * 2,
                    prefill_tokens=tokens_per_pass, chunk_off=chunk_off,
                    graphs=int(graph_reserve_mib(b.decode_bs, b.chunked, b.mla, b.prefill,
                                                 prefill_graph_cap(b.rules, s.ctx, b.model_path)) * MiB)
                    if not s.sglang.disable_cuda_graph else 0)


def served_context(ctx: int, pool_tokens: int) -> int:
    """SGLang's longest request: max_req_len = min(context_len − 1, max_total_num_tokens − 1) (managers/tp_worker.py
    get_worker_info, sglang 0.5.23); ≤ 0 is its start-up assert "Memory pool size is too small"."""
    return min(ctx - 1, pool_tokens - 1)


def _unasked_context_served(s: Settings, pool: _Pool, asked_ctx: int | None) -> tuple[Settings, str | None]:
    """No --context-length asked and a pool shorter than config.json's context: SGLang starts and serves requests up
    to max_req_len — the allocation is planned at that context, with the compromise said ("tight"). An asked
    context, or a pool that holds it, is left as it is."""
    assert s.ctx is not None                # set by defaults()
    served = served_context(s.ctx, pool.tokens)
    if asked_ctx is not None or pool.tokens >= s.ctx or served <= 0:
        return s, None
    return s.with_(ctx=served), (
        f"no context asked: SGLang starts at config.json's context {s.ctx:,} with a KV pool of {pool.tokens:,} tokens "
        f"and serves requests up to {served:,} tokens (max_req_len = min(context − 1, pool − 1), managers/tp_worker.py "
        f"{SGLANG_REF}); longer ones are refused — --context-length {served} says so at start-up")


def _explain(model: ModelSpec, weights: WeightEstimate, s: Settings, asked: Settings, b: _Budget, pool: _Pool,
             out: _Outside) -> list[Step]:
    """The steps --explain shows, from the typed results (``asked``: the settings as given, before defaults)."""
    steps: list[Step] = []
    passed = s.sglang.mem_fraction_static or 0.9      # the server's argument; b.frac: after ModelRunner's factor
    if asked.sglang.mem_fraction_static is None:
        formula = fraction_and_formula(b.gpu_mem_mib, b.chunked, b.decode_bs, b.tp, b.pp, b.mla, b.rules, s.ctx,
                                       b.model_path, b.amd, b.architecture, b.vlm)[1]
        steps.append(Step("mem_fraction_static", formula, f"{passed:.6g}",
                          b.rules.fraction_source if b.rules else f"python/sglang/srt/arg_groups/memory_hook.py "
                          f"({SGLANG_REF})"))
    else:
        steps.append(Step("mem_fraction_static", "set with --mem-fraction-static", f"{passed:g}"))
    if b.runner:
        steps.append(Step("multimodal reduction", f"{passed:.6g} × {b.runner[0]} for a multimodal model, asked or not "
                          "(ModelRunner: \"Automatically reduce --mem-fraction-static\")", f"{b.frac:.6g}", b.runner[1]))
    steps.append(Step("chunked prefill / decode graphs",
                      f"by GPU memory {b.gpu_mem_mib:,.0f} MiB and TP {b.tp}", f"chunked_prefill_size {b.chunked}, "
                      f"cuda graph max_bs {b.decode_bs}", b.rules.tiers_source if b.rules else
                      "arg_groups/memory_hook.py handle_gpu_memory_settings"))
    steps.append(Step("static budget", f"free before weights {b.pre:,} B (free {b.free:,} − CUDA context "
                      f"{CUDA_CONTEXT // MiB} MiB" + (f" − distributed init {b.dist / GiB:.2f} GiB" if b.dist else "")
                      + f") × {b.frac:.6g}", f"{b.budget:,} B",
                      "mem_cache/kv_cache_configurator.py _profile_available_bytes; model_runner.py "
                      "init_torch_distributed (logged mem usage)"))
    steps.append(Step("weights per GPU", f"{weights.total:,} B / (TP {b.tp} × PP {b.pp})", f"{b.weights:,} B"))
    cell_formula = (f"full {pool.full_cell:,} + {SWA_FULL_TOKENS_RATIO} × SWA {pool.swa_cell:,} B/token" if pool.hybrid
                    else f"{pool.cell:,} B/token ({pool.n_layers} layers, {pool.dtype})")
    steps.append(Step("KV pool tokens", f"(budget − weights) {max(0, b.rest):,} B / {cell_formula}",
                      f"{pool.tokens:,}" + (f" (SWA pool {pool.swa_tokens:,})" if pool.hybrid else ""),
                      "model_executor/pool_configurator.py calculate_pool_sizes"))
    steps.append(Step("req_to_token pool", f"({out.max_reqs:,} requests + 1) × (context {s.ctx:,} + 4) × int32",
                      f"{out.req_to_token:,} B", "mem_cache/memory_pool.py ReqToTokenPool"))
    if out.chunk_off:
        steps.append(Step("chunked prefill off", f"{model.architecture}: the server sets chunked_prefill_size -1 after "
                          f"sizing mem_fraction_static with chunk {b.chunked}; a prompt is prefilled in one pass of "
                          f"up to max(context {s.ctx:,}, max_prefill_tokens {MAX_PREFILL_TOKENS:,}), within the KV pool",
                          f"{out.prefill_tokens:,} tokens a pass", out.chunk_off))
    pass_words = f"one whole-prompt pass {out.prefill_tokens}" if out.chunk_off else f"chunk {b.chunked}"
    steps.append(Step("activations + CUDA graphs",
                      f"{pass_words} × (4×{model.hidden_size} + 3×{out.intermediate}/TP) × 2 B + SGLang's graph "
                      "reserve", f"{out.activation + out.graphs:,} B", "arg_groups/memory_hook.py reserve_for_graph_mb"
                      + (f"; {b.ref}: " + ("prefill graphs on (0.5.11+)" if b.prefill else "decode graphs only"))))
    return steps


def _assumptions(model: ModelSpec, s: Settings, b: _Budget, pool: _Pool, host: bool) -> tuple[str, ...]:
    assert s.ctx is not None                # set by defaults()
    out = [f"{b.ref} defaults; page_size {PAGE_SIZE}; no speculative decoding"]
    prefill, off = prefill_graphs(b.rules, b.amd, b.pp, b.mla, b.architecture)
    if not prefill and (b.rules is None or b.rules.prefill_graphs):
        out.append(f"no prefill CUDA graphs reserved: the server turns them off for {off}")
    if pool.tokens and pool.tokens < s.ctx:
        out.append(f"KV pool holds {pool.tokens:,} tokens, fewer than --context-length {s.ctx:,}: SGLang "
                   "starts (managers/tp_worker.py warns) but refuses or truncates longer requests")
    if host:
        out.append("host: no KV cache in RAM (hierarchical cache off); the process itself not modelled")
    if any(model.recurrent_layers):
        out.append("mamba / linear-attention state pool not modelled")
    if pool.hybrid:
        out.append(f"hybrid SWA pool: SWA layers get {SWA_FULL_TOKENS_RATIO} × the full layers' tokens")
    return (*out, f"CUDA context {CUDA_CONTEXT // MiB} MiB + cuBLAS {CUBLAS_WORKSPACE // MiB} MiB per GPU (measured, "
            "H100)" + (f" + distributed init {b.dist / GiB:.2f} GiB (logged by SGLang)" if b.dist else ""),
            *_vlm_assumption(model, b))


def _vlm_assumption(model: ModelSpec, b: _Budget) -> list[str]:
    """What the plan says of SGLang's vision-model reduction of mem_fraction_static (vlm_reduction)."""
    if b.runner:
        return [f"multimodal model: SGLang's ModelRunner multiplies mem_fraction_static by {b.runner[0]}, asked or not "
                f"({b.runner[1]}; from 0.4.9 an unasked fraction only: × 0.90 in 0.4.9, by the vision tower's size "
                "from 0.4.10)"]
    if b.vlm:
        return [f"vision model: SGLang lowers an unasked mem_fraction_static {b.vlm[1]}"]
    if not model.vision_params:
        return []
    source = (b.rules or sglang_rules(None)).vlm_fraction_source(model.architecture)
    return ["vision model outside the catalog: SGLang lowers an unasked mem_fraction_static by its vision_config's "
            f"size ({source}); not modelled here (config.json's vision_config not kept)"] if source else []


class SGLang:
    name = "sglang"
    pools_kv = True
    levers = Levers(weight_quants=("fp8",), kv_cache_types=("fp8",), budget="mem_fraction_static",
                    tensor_parallel=True)   # --quantization fp8, --kv-cache-dtype fp8_e5m2, --tp
    release_rules: SGLangRules | None = None    # `-r sglang==X`: that release's defaults (runtimes/sglang_versions.py)

    def _tiers(self, gpu_mem: float, tp: int) -> tuple[int, int]:
        """(chunked_prefill_size, decode CUDA-graph max batch size) by GPU memory, at this planner's release."""
        modelled = gpu_memory_defaults(gpu_mem, tp)
        return tier_defaults(self.release_rules, gpu_mem, tp, modelled) if self.release_rules else modelled

    def _gpus(self, targets: list[Target]) -> list[Target]:
        # an NVIDIA unified-memory device (DGX Spark, Jetson) is a CUDA GPU to SGLang: NVIDIA ships it for the DGX
        # Spark (build.nvidia.com/spark/sglang, image lmsysorg/sglang:spark), as vLLM plans every non-CPU target
        return [t for t in targets if t.kind == "gpu" or (t.kind == "unified" and _nvidia(t))]

    def _gpu_mem_mib(self, gpus: list[Target]) -> float | None:
        # get_nvgpu_memory_capacity: nvidia-smi memory.total, the minimum over GPUs, in MiB
        return min((t.total or t.capacity) for t in gpus) / MiB if gpus else None

    def _decode_max_bs(self, gpu_mem: float | None, tp: int, max_running: int | None) -> int:
        bs = self._tiers(gpu_mem, tp)[1] if gpu_mem is not None else 160
        return min(bs, max_running) if max_running else bs

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        return self._defaults(model, settings, targets, vlm_reduction(model, self.release_rules))

    def _defaults(self, model: ModelSpec, settings: Settings, targets: list[Target],
                  vlm: tuple[float, str] | None) -> Settings:
        """defaults() with the vision model's reduction already worked out (``vlm``: allocate's, which the budget's
        words reuse)."""
        gpus = self._gpus(targets)
        tp, pp = max(1, settings.tp), max(1, settings.pp)
        gpu_mem = self._gpu_mem_mib(gpus)
        mla = any(a.kind == "mla" for a in model.attention_layers)
        chunked = settings.sglang.chunked_prefill_size or (self._tiers(gpu_mem, tp)[0] if gpu_mem else 4096)
        max_running = None if settings.parallel == PARALLEL_AUTO else settings.parallel
        frac = settings.sglang.mem_fraction_static
        # --context-length: the model's own context, passed explicitly (context_limit.sglang_default_note)
        ctx = sglang_planned_context_length(model, settings.ctx)
        if frac is None:
            # the command passes --context-length ctx and --model-path, so a release that clamps its prefill graphs
            # to either does
            frac = (default_mem_fraction_static(gpu_mem, chunked, self._decode_max_bs(gpu_mem, tp, max_running),
                                                tp, pp, mla, self.release_rules, ctx, serve_path(model, settings.quant),
                                                _amd(gpus), model.architecture, vlm)
                    if gpu_mem else 0.95)
        k = _kv_dtype(settings.cache_type_k)
        return settings.with_(
            ctx=ctx,
            chunked_prefill_size=chunked, mem_fraction_static=frac,
            cache_type_k=k[0] if k else settings.cache_type_k, cache_type_v=k[0] if k else settings.cache_type_v,
        )

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        vlm = vlm_reduction(model, self.release_rules)    # once: the unasked fraction and --explain's words
        s = self._defaults(model, settings, targets, vlm)
        gpus, refusal = self._gpus(targets), None
        if not gpus:
            gpus = [t for t in targets if t.kind == "unified"] or targets[:1]
            refusal = _no_gpu_refusal(gpus[0])
        tp, pp = max(1, s.tp), max(1, s.pp)
        n_gpu = min(len(gpus), tp * pp) or 1
        budget = self._budget(model, weights, s, gpus, n_gpu, vlm)
        kv_dtype, kv_refusal = _kv_dtype_of(s)
        pool = _kv_pool(model, kv_dtype, tp, pp, budget.rest)
        # NVFP4 by release: Blackwell only up to 0.5.11 (ModelOpt) / 0.5.21 (compressed-tensors), FP4 Marlin after
        kernel_refusal, kernel_note = kernel_check(weights.quant, gpus[0].name, "sglang",
                                                   self.release_rules.release_text if self.release_rules else None)
        refusal = (refusal or _rocm_target_refusal(gpus[:n_gpu]) or sglang_context_refusal(model, settings.ctx)
                   or head_split_refusal(model, tp) or balance_refusal(gpus[:n_gpu], tp) or kv_refusal
                   or _refusal(budget, pool) or kernel_refusal)
        outside = _outside_budget(model, s, budget, pool.tokens)      # req_to_token at the context SGLang starts with
        served, compromise = _unasked_context_served(s, pool, settings.ctx) if refusal is None else (s, None)
        devices = tuple(
            DeviceMemory(g.name, g.kind, g.capacity, budget.weights, pool.kv_bytes, outside.activation + outside.graphs,
                         CUDA_CONTEXT + budget.dist + CUBLAS_WORKSPACE + outside.req_to_token)
            for g in (gpus * n_gpu)[:n_gpu]
        )
        host = next((t for t in targets if t.kind == "cpu"), None)
        if host is not None and gpus:
            # no KV on the host unless --enable-hierarchical-cache (off by default, server_args.py); the server
            # process itself (Python, torch, CUDA host state) is not modelled
            devices += (DeviceMemory(host.name, "cpu", host.capacity, 0, 0, 0, 0),)
        assert served.ctx is not None                # set by defaults()
        return Allocation(settings=served, devices=devices, kv_bytes_per_token=int(pool.cell),
                          kv_cache_tokens=pool.tokens, max_concurrency=pool.tokens / served.ctx if served.ctx else None,
                          refusal=refusal, compromise=compromise,
                          steps=tuple(_explain(model, weights, s, settings, budget, pool, outside)),
                          assumptions=(*([compromise] if compromise else []), *([kernel_note] if kernel_note else []),
                                       *([] if settings.ctx or not (note := sglang_default_note(model)) else [note]),
                                       *_assumptions(model, s, budget, pool, host is not None and bool(gpus))))

    def _budget(self, model: ModelSpec, weights: WeightEstimate, s: Settings, gpus: list[Target],
                n_gpu: int, vlm: tuple[float, str] | None) -> _Budget:
        """The static budget on the smallest GPU the server uses (every rank gets its pool); ``vlm``: the vision
        model's reduction _defaults applied to an unasked fraction (vlm_reduction)."""
        tp, pp = max(1, s.tp), max(1, s.pp)
        gpu = min(gpus[:n_gpu], key=lambda t: t.capacity)
        gpu_mem = self._gpu_mem_mib(gpus) or gpu.capacity / MiB
        decode_bs = self._decode_max_bs(gpu_mem, tp, None if s.parallel == PARALLEL_AUTO else s.parallel)
        dist = DIST_INIT_TP if tp > 1 else DIST_INIT_PP if pp > 1 else 0
        runner = self.release_rules.vlm_runner_factor(model.architecture) if self.release_rules else None
        return _Budget(gpu_mem_mib=gpu_mem, mla=any(a.kind == "mla" for a in model.attention_layers),
                       chunked=s.sglang.chunked_prefill_size or 0, decode_bs=decode_bs, tp=tp, pp=pp,
                       frac=(s.sglang.mem_fraction_static or 0.9) * (runner[0] if runner else 1), dist=dist,
                       free=gpu.capacity,
                       pre=max(0, gpu.capacity - CUDA_CONTEXT - dist), weights=weights.total // (tp * pp),
                       rules=self.release_rules, model_path=serve_path(model, s.quant), amd=_amd(gpus[:n_gpu]),
                       architecture=model.architecture, vlm=vlm, runner=runner)

    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        from .published import serve_args  # the user's ./folder, a published checkpoint, else the Hub repo

        path, *online_fp8 = serve_args(model, s.quant)
        parts = ["python", "-m", "sglang.launch_server", "--model-path", path]
        if s.ctx:
            parts += ["--context-length", str(s.ctx)]
        if s.sglang.mem_fraction_static is not None:
            parts += ["--mem-fraction-static", f"{s.sglang.mem_fraction_static:g}"]
        parts += online_fp8                             # server_args.py --quantization fp8: quantized at load
        kd = _kv_dtype(s.cache_type_k)
        if kd and kd[0] not in ("auto", "f16", "fp16", "float16", "bf16", "bfloat16"):
            parts += ["--kv-cache-dtype", kd[0]]
        if s.tp > 1:
            parts += ["--tp-size", str(s.tp)]
        if s.pp > 1:
            parts += ["--pp-size", str(s.pp)]
        if s.parallel != PARALLEL_AUTO:                # --max-running-requests 1 too, as asked
            parts += ["--max-running-requests", str(s.parallel)]
        nodes = -(-s.tp * s.pp // GPUS_PER_NODE)
        if nodes > 1:
            # SGLang's multi-node launch (docs, "Multi-node deployment"): the same command on every node, each with
            # its --node-rank, meeting at node 0's --dist-init-addr
            parts += ["--nnodes", str(nodes), "--dist-init-addr", "<node0>:20000", "--node-rank", "0"]
            others = "node 2" if nodes == 2 else f"nodes 2–{nodes}"
            return " ".join(parts) + f" (node 1; the same on {others} with --node-rank 1" + (
                f"–{nodes - 1})" if nodes > 2 else ")")
        return " ".join(parts)


__all__ = ["SGLang", "default_mem_fraction_static", "gpu_memory_defaults", "prefill_graph_cap", "prefill_graph_sizes"]
