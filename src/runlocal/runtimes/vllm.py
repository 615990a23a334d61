"""vLLM: a memory budget, a profiled activation peak, and a KV pool from what is left.

The rules below follow vLLM's own start-up accounting and were checked against public start-up
logs (measurements/public_logs/vllm.jsonl, benchmarks/accuracy_vllm.py):

* budget (vllm/v1/worker/gpu_worker.py, determine_available_memory; V0: vllm/worker/worker.py):
      available KV memory = total_gpu_memory × gpu_memory_utilization
                            − (weights + profiled activation peak + non-torch memory [+ CUDA graphs])
  It is a share of the card's *total* memory, not of what is free (the logs print
  "total_gpu_memory (23.58GiB) x gpu_memory_utilization (0.90) = 21.22GiB").
* CUDA graphs: until v0.20 the graphs were captured after the KV cache was sized, so their memory
  ("Graph capturing finished … took 0.67 GiB") came on top of the budget; from v0.21 their estimated
  size is subtracted inside it ("CUDA graph memory profiling is enabled (default since v0.21.0)",
  printed by gpu_worker.py). ``VLLM(engine=...)`` picks the rule; the default is the current one.
* KV pool (vllm/v1/core/kv_cache_utils.py): every attention layer gets one page per block of
  ``block_size`` 16 tokens (the CPU backend's by release, 128 from v0.11.1: vllm_cpu.cpu_block_size), page = 2 (K and
  V) × block × KV heads on this rank × head_dim × dtype bytes;
  num_blocks = available // page // layers per KV-cache group. Tensor parallel splits weights and KV
  heads; a head count below TP is replicated (1 per rank). The pool is sized by the smallest rank
  (get_kv_cache_configs: "Change the num_blocks of each rank to the smallest among all ranks").
* How the layers share the pool depends on the version (``kv_pool``, checked against the logs):
  - V0 and V1 before the hybrid KV-cache manager (``v1-pre-hybrid``, v0.8–v0.9): one group of all
    layers, sliding-window layers sized like full attention (unify_hybrid_kv_cache_specs; issue #14696,
    Gemma 3 1B on v0.8.2: 1,139,728 tokens / 32,768 = the logged 34.78x);
  - the hybrid KV-cache manager (``v1``, ``v1-cudagraph``; _get_kv_cache_groups_uniform_page_size):
    layers are grouped per attention type into groups of ``group_size`` layers (the smallest layer
    count of the types, or the largest when it is below 1.5 × the smallest), the last group of a type
    padded; the groups share one page size (a smaller page gets a larger block: unify_kv_cache_spec_page_size)
    and one block pool of available // page // group_size blocks; a request needs, per group,
    ceil(max_model_len / block) blocks (full) or ceil(min(window − 1 + max_num_batched_tokens,
    max_model_len) / block) + 1 (sliding, SlidingWindowSpec.max_memory_usage_bytes);
    concurrency = num_blocks / blocks per request (get_max_concurrency_for_kv_cache_config).
* "GPU KV cache size" (_report_kv_cache_config): num_blocks × 16 up to the hybrid manager; then
  num_blocks // number of groups × the smallest block size (v0.19: issue #40691); by v0.21 it is
  int(max_concurrency × max_model_len) (issue #41789's 193,624 tokens, not a multiple of 16; PR #40694's
  fix).
* Mamba / linear-attention layers (Qwen3-Next, Qwen3.5: Gated DeltaNet; Granite 4.0-H, Falcon-H1, Jamba: Mamba),
  from the hybrid manager on (read in the v0.19.0 wheel: vllm/model_executor/models/config.py
  HybridAttentionMambaModelConfig, vllm/v1/kv_cache_interface.py MambaSpec, mamba_utils.py): a layer's state
  (conv + SSM, split over TP, dtypes per model hook) is one page; the attention block grows to the smallest
  multiple of 16 tokens whose page holds it (Qwen3-Next at TP 4: 272; Qwen3.5-27B: 784) and the state is padded
  to that page; the layers are grouped as above (12 full + 36 GDN → 1 + 3 groups of 12) and a request takes
  1 block per mamba group (2 with prefix caching in mode "align", one per block in "all"). Both logged
  hybrid-GDN records fit exactly (issue #40691: 1,487 blocks → 290,864 tokens, 33.04x; the talos PR: 208 →
  302,921, 2.31x). V0 / pre-hybrid engines: the recurrent state is left out of the pool (not modelled).
* The profile run (gpu_model_runner.py, profile_run): one forward pass over max_num_batched_tokens (V0 without
  chunked prefill: max(max_model_len, 2048)), then the sampler over max_num_seqs rows of logits; the peak is the
  larger of the two. V0 samples on the driver (rank 0) alone: the other tensor-parallel ranks profile the forward
  only, so rank 0 holds the smallest pool (issue #13061). Fitted on the logs: the forward costs ≈ 6 bytes per token
  per (hidden + intermediate/TP) feature for a 16-bit model (Llama-3.1-8B on an RTX 3090, issue #10517: 2.07 GiB at
  20,000 tokens, 2.99 GiB at 29,000 → 109.8 kB/token; 6 × (4096 + 14336) = 110.6 kB); V1's sampler run ≈ 38.5 B
  per logit (five H100 logs), which dominates with 1024 rows; V0's (v0.6.5+) ≈ 39.2 B over 256 rows.
* Defaults (vllm/engine/arg_utils.py, _set_default_args, v0.8–v0.11): `vllm serve` on a GPU of
  ≥ 70 GiB that is not an A100: max_num_batched_tokens 8192, max_num_seqs 1024; otherwise 2048 / 256.

``VLLM.allocate`` computes typed results (``Budget`` from budget_split, ``KVPool`` from kv_pool) and
``_explain_budget`` / ``_explain_pool`` turn them into the --explain steps; the figures come only from the former.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..kv import normalize_cache_type, recurrent_state_bytes
from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from ..units import GiB, MiB
from .base import GPUS_PER_NODE, PARALLEL_AUTO, POOL_LEVERS, Allocation, DeviceMemory, Settings, Step, Target
from .context_limit import (
    vllm_context_refusal,
    vllm_default_note,
    vllm_planned_max_model_len,
    vllm_tokenizer_cap,
    vllm_tokenizer_capped,
    vllm_tokenizer_note,
)
from .options import VLLMOptions
from .published import NVFP4_FORMATS, kernel_check, published_checkpoint
from .tensor_parallel import head_split_refusal
from .versions import (
    VLLM_ENGINES,
    RuntimeVersion,
    parse_version,
    utilization_words,
    vllm_default_utilization,
    vllm_graphs_in_budget,
    vllm_swap_space,
)
from .vllm_cpu import (
    cpu_block_size,
    cpu_fp8_kv_refusal,
    cpu_kv_refusal,
    cpu_kv_rule,
    cpu_kv_space,
    kv_space_step,
)
from .vllm_kvpool import (
    BLOCK_SIZE,
    CONCURRENCY_REPORT_ENGINES,
    DEFAULT_ENGINE,
    ENGINES,
    UNIFIED_KV_ENGINES,
    KVGroup,
    KVPool,
    kv_groups,
    kv_pool,
    mamba_cache_mode,
)
from .vllm_mllama import MLLAMA, V0_FALLBACK_UNTIL, MllamaProfile, mllama_profile, profile_words
from .vllm_mm import EncoderProfile, ProfileInputs, encoder_note, encoder_profile, encoder_step, profiled_peak
from .vllm_mxfp4 import mxfp4_expert_bytes, mxfp4_padding
from .vllm_nvfp4 import nvfp4_release_refusal
from .vllm_parallel import explain_parallel
from .vllm_swap import host_swap
from .vllm_unified import GRAPHS_ON_TOP, budget_base, budget_step, planned_free, start_refusal

# vllm/config/cache.py gpu_memory_utilization: 0.92 in the current release, 0.9 up to v0.19.1 (runtimes/versions.py)
DEFAULT_UTILIZATION = vllm_default_utilization(None)

# Scheduler defaults of `vllm serve` (arg_utils.py, _set_default_args, v0.8–v0.11): large GPUs
# (≥ 70 GiB and not an A100) get 8192 batched tokens and 1024 sequences, the rest 2048 and 256. The engine reads
# them once, on device 0 ("device_memory = current_platform.get_device_total_memory()", whose device_id defaults to
# 0), and every rank profiles with them: on mixed cards the first GPU listed (device 0 — CUDA numbers the fastest
# first unless CUDA_DEVICE_ORDER=PCI_BUS_ID) sets them for all.
LARGE_GPU_BYTES = 70 * GiB
SERVE_LIMITS_LARGE = (8192, 1024)
SERVE_LIMITS_SMALL = (2048, 256)
A100_SMALL_LIMITS_FROM = (0, 9)
V0_MIN_BATCHED_TOKENS = 2048         # V0 without chunked prefill: max(max_model_len, 2048)
V0_CHUNKED_PREFILL_FROM = 32 * 1024  # V0 turned chunked prefill on for max_model_len above 32K

# Non-torch memory (allocations outside PyTorch: cuBLAS/NCCL workspaces), (one GPU, with tensor
# parallel) per engine, as logged. Up to v0.6 (before vllm PR #10511, "overhaul memory profiling")
# the CUDA context counted too: 0.35 GiB (issue #10517, v0.6.4, RTX 3090: initial_memory_usage 15.34
# − weights 14.99). V0 after it: 0.03–0.06 GiB on one GPU (issues #13882, #17327), 0.25 GiB per rank
# with TP 2 (issue #13061). V1: 0.13–0.14 GiB on one H100 (five models, llm-d-benchmark
# empirical-vllm-memory-results.md), 0.55 GiB per rank with TP 2 there, 0.21 GiB with TP 4 (v0.10.2, L40S).
NON_TORCH = {"v0.6": (350 * MiB, 350 * MiB), "v0": (64 * MiB, 256 * MiB), "v1-pre-hybrid": (133 * MiB, 400 * MiB),
             "v1": (133 * MiB, 400 * MiB), "v1-cudagraph": (133 * MiB, 400 * MiB)}
# Estimated CUDA graph pool: 0.42–0.67 GiB logged for 1–8B models (v0.10–v0.25 "Graph capturing
# finished … took" / "Estimated CUDA graph memory"); far larger for MoE with many experts.
CUDA_GRAPH_BYTES = GRAPHS_ON_TOP
# bytes per token of the profiled forward peak, per (hidden + intermediate/TP) feature, 16-bit model
ACTIVATION_BYTES_PER_FEATURE = 6
# The dummy sampler run (after the forward: the two peaks do not add) samples max_num_seqs rows of
# logits with top-k/top-p; the PyTorch sort-based path keeps f32 logits, sorted values, int64
# indices, softmax and cumsum copies. Fitted on five V1 logs on an H100 (llm-d-benchmark
# config_explorer/empirical-vllm-memory-results.md, `vllm serve`: 1024 rows): peak activation
# 4.76 GiB for Llama-3.1-8B (vocab 128,256), 5.56 for Qwen3-0.6B and 5.64 for Qwen3-32B (151,936),
# 7.38 for gpt-oss-20b/120b (201,088): 38.4–38.9 B per logit.
# V0 (v0.6.5+) profiles the same sort path over its 256 rows, on the driver (rank 0) only: 1.42 GiB for
# 256 × 152,064 logits (issue #13882, one GPU: 39.2 B per logit), 1.26 GiB for 256 × 128,256 at TP 1 and
# TP 2 alike (PR #10511: 41.2 B; the forward alone would halve with TP), and issue #13061's pool (TP 2)
# implies 1.42 GiB on rank 0 (39.1 B) while the worker whose figures the issue quotes peaked at 0.19 GiB
# (its forward). v0.6.4 kept only the f32 logits: #10517's 35K run (chunked prefill, 2048 tokens,
# 256 rows × 128,256) peaked 0.06 GiB above its weights, so ≤ 4 B per logit there.
SAMPLER_BYTES_PER_LOGIT = {"v0.6": 4, "v0": 39.2, "v1-pre-hybrid": 38.5, "v1": 38.5, "v1-cudagraph": 38.5}
# The V0 engines. Their sampler runs on the driver alone (V0's LogitsProcessor gathers the logits to rank 0;
# V1 all-gathers them and every rank runs the dummy sampler), and they allocate the CPU swap space (below).
V0_ENGINES = ("v0.6", "v0")
V0_MAX_NUM_SEQS = 256                # V0's default max_num_seqs on every GPU


def serve_limits(capacity: int, gpu_name: str = "", release: tuple[int, ...] | None = None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) that `vllm serve` picks for this GPU. An A100 gets the small limits
    from PR #17885 on (in the 0.9.2 wheel's arg_utils.py, not in 0.8.5's; 0.9.0 assumed)."""
    a100_small = release is None or release >= A100_SMALL_LIMITS_FROM
    if capacity >= LARGE_GPU_BYTES and not ("a100" in gpu_name.lower() and a100_small):
        return SERVE_LIMITS_LARGE
    return SERVE_LIMITS_SMALL


def mlp_width(model: ModelSpec) -> int:
    """Intermediate features one token touches in an MLP block: the dense width, or for MoE the
    routed experts' width × experts per token (fused_moe's intermediate cache) plus shared experts."""
    if not (model.n_experts and model.n_experts_active):
        return model.intermediate_size or 4 * model.hidden_size
    routed = shared = 0
    for t in model.tensors:
        if not routed and t.role == "expert_gate_up" and len(t.shape) == 3:
            other = [d for d in t.shape[1:] if d != model.hidden_size] or [t.shape[1]]
            routed = other[0] // 2
        elif not routed and t.role == "expert_up" and len(t.shape) == 3:
            other = [d for d in t.shape[1:] if d != model.hidden_size] or [t.shape[1]]
            routed = other[0]
        elif not shared and t.role == "shared_up" and len(t.shape) == 2:
            shared = t.shape[0] if t.shape[1] == model.hidden_size else t.shape[1]
        if routed and shared:
            break
    routed = routed or (model.intermediate_size or 4 * model.hidden_size)
    return routed * model.n_experts_active + shared


def activation_bytes(model: ModelSpec, batched_tokens: int, num_seqs: int, tp: int = 1,
                     engine: str = DEFAULT_ENGINE, sampler: bool = True) -> int:
    """Profiled peak: the dummy forward over ``batched_tokens``, or the dummy sampler run over
    ``num_seqs`` rows of logits after it, whichever is larger (``sampler=False``: a V0 worker that is
    not the driver, which profiles the forward only)."""
    inter = mlp_width(model)
    forward = batched_tokens * ACTIVATION_BYTES_PER_FEATURE * (model.hidden_size + inter // max(1, tp))
    if not sampler:
        return forward
    logits = int(min(num_seqs, batched_tokens) * model.vocab_size * SAMPLER_BYTES_PER_LOGIT[engine])
    return max(forward, logits)


@dataclass(frozen=True)
class Budget:
    capacity: int
    utilization: float
    budget: int
    weights: int
    activation: int
    non_torch: int
    cuda_graphs: int             # inside the budget (v1-cudagraph) or on top of it (older engines)
    graphs_in_budget: bool
    kv_memory: int               # may be negative: vLLM then refuses to start
    batched_tokens: int
    num_seqs: int
    # the other ranks (tensor/pipeline parallel): V0 samples on rank 0 alone, so its workers peak lower
    # and keep more memory; the pool is sized by the smallest rank, min(kv_memory, kv_memory_workers)
    activation_workers: int = 0
    kv_memory_workers: int = 0
    encoder: EncoderProfile | None = None    # a multimodal encoder's profile run (runtimes/vllm_mm.py), in activation
    text_activation: int = 0                 # the text dummy run's peak alone
    mm_inputs: ProfileInputs | None = None   # what the encoder's profile depends on (its --explain levers)
    mllama: MllamaProfile | None = None      # V0's Mllama vision encoder on max_num_seqs images (vllm_mllama.py)

    @property
    def graphs_on_top(self) -> int:
        """The CUDA graphs' bytes where they come on top of the budget (before v0.21), else 0."""
        return 0 if self.graphs_in_budget else self.cuda_graphs

    @property
    def pool_memory(self) -> int:
        return min(self.kv_memory, self.kv_memory_workers)


def budget_split(model: ModelSpec, weights: WeightEstimate, s: Settings, gpu: Target,
                 engine: str = DEFAULT_ENGINE, graphs_in_budget: bool | None = None,
                 release: tuple[int, ...] | None = None, device0: Target | None = None) -> Budget:
    """The start-up accounting of one GPU (rank 0), as vLLM prints it; the CUDA graphs inside the budget from
    v0.20.0 (``graphs_in_budget``; None: by the engine, "v1-cudagraph"). ``device0``: the card whose memory and name
    set the batch defaults (SERVE_LIMITS' device 0), ``gpu`` itself when None."""
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
    tp, pp = max(1, s.tp), max(1, s.pp)
    util = s.vllm.gpu_memory_utilization or DEFAULT_UTILIZATION
    budget = int(budget_base(gpu) * util)      # CUDA's total on a unified NVIDIA device (vllm_unified.py)
    w = weights.total // (tp * pp)
    mx = mxfp4_expert_bytes(model, tp, gpu.name) if weights.quant == "mxfp4" else None
    if mx:
        # the experts as vLLM pads them for its MXFP4 MoE kernel, the rest split over the ranks
        w = (weights.total - mx[0]) // (tp * pp) + mx[1] // pp
    if s.vllm.dp > 1 and not mx:   # MoE layers shard over all DP × TP ranks (runtimes/vllm_parallel.py)
        from .vllm_parallel import weights_per_gpu

        w = weights_per_gpu(model, weights, tp, pp, s.vllm.dp)
    if s.vllm.enable_lora:       # LoRA slots are made in load_model: counted with the weights (runtimes/vllm_lora.py)
        from .vllm_lora import lora_slot_bytes

        w += lora_slot_bytes(model, s.vllm.max_loras, s.vllm.max_lora_rank, tp, pp)
    default_tokens, default_seqs = serve_limits((device0 or gpu).capacity, (device0 or gpu).name, release)
    v0 = engine in ("v0.6", "v0")
    if v0:
        default_tokens, default_seqs = SERVE_LIMITS_SMALL[0], V0_MAX_NUM_SEQS
    num_seqs = default_seqs if s.parallel == PARALLEL_AUTO else s.parallel
    ctx = vllm_planned_max_model_len(model, s.ctx)
    if s.vllm.max_num_batched_tokens:
        tokens = s.vllm.max_num_batched_tokens
    elif v0 and ctx <= V0_CHUNKED_PREFILL_FROM:
        tokens = max(ctx, V0_MIN_BATCHED_TOKENS)
    else:
        tokens = default_tokens
    act = activation_bytes(model, tokens, num_seqs, tp, engine)
    act_workers = act
    if tp * pp > 1 and engine in V0_ENGINES:
        act_workers = activation_bytes(model, tokens, num_seqs, tp, engine, sampler=False)
    mm_inputs = ProfileInputs(ctx, engine, tokens, num_seqs, release, tp)
    enc = encoder_profile(model, ctx, engine, tokens, num_seqs, release, tp=tp)   # every rank runs it, MLP split over TP
    text_act, act, act_workers = act, profiled_peak(act, enc), profiled_peak(act_workers, enc)
    # every rank runs the vision encoder whole, its MLP's fc1 column-parallel (vllm_mllama.py)
    mllama = mllama_profile(model, num_seqs, tp) if v0 else None
    if mllama:
        act, act_workers = max(act, mllama.peak), max(act_workers, mllama.peak)
    non_torch = NON_TORCH[engine][0 if tp * pp == 1 else 1]
    graphs = 0 if s.vllm.enforce_eager else CUDA_GRAPH_BYTES
    in_budget = engine == "v1-cudagraph" if graphs_in_budget is None else graphs_in_budget
    kv = budget - w - act - non_torch - (graphs if in_budget else 0)
    kv_workers = kv + act - act_workers
    return Budget(gpu.capacity, util, budget, w, act, non_torch, graphs, in_budget, kv, tokens, num_seqs,
                  act_workers, kv_workers, enc, text_act, mm_inputs, mllama)


def weights_step(model: ModelSpec, weights: WeightEstimate, tp: int, pp: int, gpu: Target, per_gpu: int) -> Step:
    mx = mxfp4_expert_bytes(model, tp, gpu.name) if weights.quant == "mxfp4" else None
    if not mx:
        return Step("weights per GPU", f"{weights.total:,} B / (TP {tp} × PP {pp})", f"{per_gpu:,} B")
    i_mult, h_mult, backend = mxfp4_padding(gpu.name)
    return Step("weights per GPU", f"({weights.total:,} − {mx[0]:,} B MXFP4 experts as stored) / (TP {tp} × PP {pp}) + "
                f"{mx[1]:,} B experts as {backend} pads them (intermediate/TP → ×{i_mult}, hidden → ×{h_mult}) / PP {pp}",
                f"{per_gpu:,} B", "vllm/model_executor/layers/quantization/mxfp4.py Mxfp4MoEMethod.create_weights")


def largest_model_len(pool: KVPool, groups: list[KVGroup], max_model_len: int, batched: int, engine: str,
                      mode: str, block_size: int = BLOCK_SIZE) -> int:
    """The longest max_model_len one request of which the pool's blocks hold: what vLLM's refusal names ("the
    estimated maximum model length is …", kv_cache_utils.py check_enough_kv_cache_memory / estimate_max_model_len,
    a bisection over max_model_len); 0 where not even one token's blocks fit."""
    def holds(n: int) -> bool:
        return kv_pool(0, groups, n, batched, engine, num_blocks=pool.num_blocks, mamba_cache_mode=mode,
                       block_size=block_size).max_concurrency >= 1
    lo, hi = 0, max_model_len - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid - 1)
    return lo


def smallest_rank(ranks: list[Target], split: Callable[[Target], Budget]) -> tuple[int, Target, Budget]:
    """The rank whose KV memory is least, and its budget: every rank sizes its budget by its own card (gpu_worker.py
    init_device: requested_memory = total_memory × gpu_memory_utilization; determine_available_memory returns
    requested_memory − non-KV memory), and the engine then gives every rank the smallest rank's blocks (earlier V1:
    vllm/v1/core/kv_cache_utils.py unify_kv_cache_configs, "changes the num_blocks of each worker to the smallest
    among all workers"; later get_kv_cache_configs; V0: executor_base.py determine_num_available_blocks, the min over
    the workers). So a 24 GiB + 12 GiB pair holds what 2 × 12 GiB holds, in either order — and two cards of one name
    with different --vram are two budgets (review20b finding 2). Returns the rank's index, its card and budget."""
    budgets: dict[tuple[str, int, int | None], Budget] = {}   # one budget per card and the memory it may use
    for g in ranks:
        if _card(g) not in budgets:
            budgets[_card(g)] = split(g)
    index = min(range(len(ranks)), key=lambda i: budgets[_card(ranks[i])].pool_memory)
    return index, ranks[index], budgets[_card(ranks[index])]


def _card(g: Target) -> tuple[str, int, int | None]:
    """A rank's card as its budget sees it: the name, and the memory it may use (two of one name with another --vram
    are two cards)."""
    return g.name, g.capacity, g.total


def _start_refusal(gpu: Target, b: Budget, release: RuntimeVersion | None) -> str | None:
    """vllm_unified.start_refusal at the plan's fraction, the CUDA graphs counted where they come on top of it."""
    return start_refusal(gpu, b.utilization, release.key if release else None, b.graphs_on_top, b.weights,
                         b.weights + b.activation + b.non_torch + (b.cuda_graphs if b.graphs_in_budget else 0))


def _refusal(b: Budget, pool: KVPool, gpu: Target, max_model_len: int, cpu_space: int | None,
             longest: int) -> str | None:
    """vLLM's refusals at start-up: no memory left for the cache blocks, or not one request of max_model_len (naming
    the longest that fits, as vLLM does; a hybrid model's logged token count is per KV-cache group, review17 §11)."""
    encoder = encoder_note(b.encoder, b.text_activation, b.activation)
    if b.pool_memory <= 0:
        return ("No available memory for the cache blocks: weights and activations exceed "
                f"gpu_memory_utilization {b.utilization} of {gpu.name}" + encoder)
    if pool.max_concurrency < 1:
        logged = (f"; {pool.tokens:,} tokens is the pool as vLLM logs it (\"GPU KV cache size\", per KV-cache group "
                  f"of {pool.groups})" if pool.groups > 1 and pool.tokens < longest else "")
        where = ("the KV pool" if cpu_space is None else f"VLLM_CPU_KVCACHE_SPACE={cpu_space // GiB} GiB"
                 if cpu_space % GiB == 0 else f"the CPU KV cache space ({cpu_space / GiB:.2f} GiB)")
        return (f"max_model_len {max_model_len:,} needs more KV cache than {where} holds: the largest max_model_len "
                f"that fits is {longest:,}{logged} (vLLM refuses to start"
                + ("; raise VLLM_CPU_KVCACHE_SPACE, or lower --max-model-len)" if cpu_space is not None else ")")
                + encoder)
    return None


def _explain_budget(model: ModelSpec, weights: WeightEstimate, b: Budget, gpu: Target, tp: int, pp: int,
                    engine: str, space_step: Step | None,
                    parallel: tuple[Step, ...] = ()) -> tuple[Step, ...]:
    """The --explain steps of the memory budget (determine_available_memory) down to the KV pool's bytes."""
    graphs_note = ("inside the budget (vLLM ≥ 0.20 estimates them first)" if b.graphs_in_budget
                   else "on top of the budget (captured after the KV cache is sized)")
    workers_note = ""
    if b.activation_workers != b.activation:
        workers_note = (f"; the other ranks profile the forward only ({b.activation_workers:,} B) and keep more, "
                        "but every rank gets the smallest rank's blocks")
    return (
        space_step if space_step is not None else budget_step(gpu, b.utilization, b.budget),
        weights_step(model, weights, tp, pp, gpu, b.weights),
        *parallel,
        *encoder_step(model, b.encoder, b.text_activation, b.mm_inputs),
        *([Step("Mllama vision profile", b.mllama.formula(), f"{b.mllama.peak:,} B", "vllm/worker/"
                "enc_dec_model_runner.py profile_run, models/mllama.py MllamaVisionModel (0.6.2, 0.10.2); a lower "
                "bound")] if b.mllama else []),
        Step("activation peak",
             ("max(encoder, encoder outputs + " if b.encoder else "max(Mllama vision profile, " if b.mllama else "")
             + f"max({b.batched_tokens} tokens × {ACTIVATION_BYTES_PER_FEATURE} B × (hidden + intermediate/TP), "
             f"sampler {min(b.num_seqs, b.batched_tokens)} rows × vocab {model.vocab_size} × "
             f"{SAMPLER_BYTES_PER_LOGIT[engine]} B)" + (")" if b.encoder or b.mllama else "")
             + (" on rank 0" if workers_note else ""),
             f"{b.activation:,} B", "gpu_model_runner.py profile_run, fitted on public start-up logs"),
        Step("non-torch memory", "NCCL/cuBLAS workspaces outside PyTorch", f"{b.non_torch:,} B"),
        Step("CUDA graphs", graphs_note, f"{b.cuda_graphs:,} B", "gpu_worker.py"),
        Step("KV pool", "budget − weights − activation − non-torch" + (" − graphs" if b.graphs_in_budget else "")
             + workers_note, f"{max(0, b.pool_memory):,} B"),
    )


def _explain_pool(pool: KVPool, groups: list[KVGroup], mode: str, need: int, tp: int,
                  engine: str) -> tuple[Step, ...]:
    """The --explain steps of the KV pool: mamba pages (hybrid models), blocks, tokens, concurrency."""
    hybrid = pool.groups > 1
    mamba_steps: tuple[Step, ...] = ()
    if pool.mamba_groups:
        a1 = pool.page_bytes // max(1, pool.block_size)
        block_rule = "lcm(chunk, 16)" if mode == "all" else "16"
        mamba_steps = (
            Step("mamba state page", f"conv + SSM state of one recurrent layer on this rank (TP {tp}; "
                 "conv in the model dtype, SSM as the model's config asks)", f"{pool.mamba_state_bytes:,} B",
                 "vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator / DtypeCalculator"),
            Step("attention block", f"{block_rule} × ⌈state / ({block_rule} × {a1:,} B/token)⌉ tokens; page "
                 f"{pool.block_size} × {a1:,} B, the mamba page padded to it",
                 f"{pool.block_size} tokens, page {pool.page_bytes:,} B",
                 "vllm/model_executor/models/config.py HybridAttentionMambaModelConfig"),
            Step("KV-cache groups", f"{pool.groups - pool.mamba_groups} attention + {pool.mamba_groups} mamba "
                 f"groups of {pool.group_size} layers (mamba_cache_mode {mode})", f"{pool.groups}",
                 "kv_cache_utils.py _get_kv_cache_groups_uniform_page_size"),
        )
    if hybrid:
        blocks_how = (f"pool // (page {pool.bytes_per_block // max(1, pool.group_size):,} B × {pool.group_size} "
                      f"layers per group), {pool.groups} KV-cache groups share it")
    else:
        blocks_how = f"pool // ({pool.bytes_per_token:,} B/token × block {pool.block_size})"
    if engine in CONCURRENCY_REPORT_ENGINES:
        tokens_how = f"int(max concurrency × max_model_len {need:,})"
    elif hybrid:
        smallest = min(pool.block_size, need) if pool.mamba_groups and mode == "none" else pool.block_size
        tokens_how = f"{pool.num_blocks:,} blocks // {pool.groups} groups × {smallest}"
    else:
        tokens_how = f"{pool.num_blocks:,} blocks × {pool.block_size}"
    if engine in UNIFIED_KV_ENGINES and any(g.window for g in groups):
        tokens_how += " (sliding-window layers sized like full attention in this version)"
    return (
        *mamba_steps,
        Step("KV blocks", blocks_how, f"{pool.num_blocks:,}", "vllm/v1/core/kv_cache_utils.py get_kv_cache_config"),
        Step("KV tokens", tokens_how, f"{pool.tokens:,}", "kv_cache_utils.py _report_kv_cache_config"),
        Step("max concurrency", f"{pool.num_blocks:,} blocks / {pool.blocks_per_request:,} blocks per request of "
             f"{need:,} tokens" + (f" ({pool.mamba_blocks_per_request} per mamba group)" if pool.mamba_groups
                                   else " (sliding groups hold their window only)" if hybrid else ""),
             f"{pool.max_concurrency:.2f}x", "kv_cache_utils.py get_max_concurrency_for_kv_cache_config"),
    )


class VLLM:
    name = "vllm"
    pools_kv = True
    levers = POOL_LEVERS

    def __init__(self, engine: str = DEFAULT_ENGINE, enable_prefix_caching: bool = False) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
        self.engine = engine
        # hybrid (mamba) models: vLLM leaves prefix caching off unless asked (--enable-prefix-caching), which
        # decides their mamba_cache_mode
        self.enable_prefix_caching = enable_prefix_caching

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        gpus = [t for t in targets if t.kind != "cpu"] or targets[:1]
        release = self._release()
        default_tokens = (serve_limits(gpus[0].capacity, gpus[0].name, release.key if release else None)[0] if gpus
                          else SERVE_LIMITS_SMALL[0])
        if model.kv_cache_quant and self.engine == "v1-cudagraph" and settings.cache_type_k == settings.cache_type_v == "f16":
            # --kv-cache-dtype auto takes a ModelOpt checkpoint's kv_cache_quant_algo (vllm/utils/torch_utils.py
            # resolve_kv_cache_dtype_string, issue #34752; modelled from v0.21 on, where it is certainly present)
            settings = settings.with_(cache_type_k=model.kv_cache_quant, cache_type_v=model.kv_cache_quant)
        return settings.with_(
            # the model's own context, passed explicitly (context_limit.vllm_default_note says where vLLM's differs)
            # 0.9.1 caps it at the tokenizer's model_max_length (context_limit.vllm_tokenizer_capped)
            ctx=vllm_tokenizer_capped(model, vllm_planned_max_model_len(model, settings.ctx),
                                      release.key if release else None),
            gpu_memory_utilization=settings.vllm.gpu_memory_utilization or vllm_default_utilization(self._release()),
            max_num_batched_tokens=settings.vllm.max_num_batched_tokens or default_tokens,
            cache_type_k=normalize_cache_type(settings.cache_type_k, field="kv-cache-dtype"),
            cache_type_v=normalize_cache_type(settings.cache_type_v, field="kv-cache-dtype"),
        )

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        alloc = self._allocate(model, weights, settings, targets)
        if model.architecture == MLLAMA:
            alloc = replace(alloc, assumptions=(*self._mllama_words(model, settings), *alloc.assumptions))
        release = self._release()
        note = vllm_tokenizer_note(model, vllm_planned_max_model_len(model, settings.ctx),
                                   release.key if release else None)
        if note is None:
            return alloc
        # the server starts, at a shorter context than the command asks: said, and the answer is the compromise
        return replace(alloc, compromise=None if alloc.refusal else alloc.compromise or note,
                       assumptions=(note, *alloc.assumptions))

    def _allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                  targets: list[Target]) -> Allocation:
        gpus = [t for t in targets if t.kind != "cpu"] or targets[:1]
        release, asked_share, engine = self._release(), settings.vllm.gpu_memory_utilization, self._engine_for(model)
        settings = settings.with_(gpu_memory_utilization=asked_share or vllm_default_utilization(release))
        # the user's max_num_batched_tokens (or the engine's own default) goes to the profile run
        rank, gpu, b = smallest_rank(gpus[:max(1, settings.tp) * max(1, settings.pp) * max(1, settings.vllm.dp)],
                               lambda g: budget_split(model, weights, settings.with_(
                                   ctx=vllm_planned_max_model_len(model, settings.ctx)), g, engine,
                                   vllm_graphs_in_budget(release), release.key if release else None, gpus[0]))
        s = self.defaults(model, settings, targets).with_(max_num_batched_tokens=b.batched_tokens)
        assert s.ctx is not None                # set by defaults()
        b, block, block_note, cpu_space, space_step, cpu_refusal = self._cpu_backend(model, s, gpu, b)
        tp, pp = max(1, s.tp), max(1, s.pp)
        n_gpu = min(len(gpus), tp * pp * max(1, s.vllm.dp)) or 1
        groups = kv_groups(model, s.cache_type_k, s.cache_type_v, tp, pp)
        mode = mamba_cache_mode(model, self.enable_prefix_caching)
        pool = kv_pool(b.pool_memory, groups, s.ctx, b.batched_tokens, engine, mamba_cache_mode=mode,
                       block_size=block)
        kernel_refusal, kernel_note = kernel_check(weights.quant, gpu.name, "vllm", getattr(self, "version", None))
        longest = largest_model_len(pool, groups, s.ctx, b.batched_tokens, engine, mode, block) \
            if pool.max_concurrency < 1 else s.ctx
        # the CPU backend's config check (check_and_update_config) runs before its worker's memory checks
        asked = release.key if (release := self._release()) and getattr(self, "version", None) else None
        # ModelConfig checks the context first (vllm/config/model.py): a --max-model-len past the derived length
        refusal = (vllm_context_refusal(model, settings.ctx, release.key if release else None)
                   or nvfp4_release_refusal(published_checkpoint(model, weights.quant) if weights.quant in NVFP4_FORMATS
                                         else None, model, asked)   # the release cannot load it (vllm_nvfp4.py)
                   or head_split_refusal(model, tp) or _start_refusal(gpu, b, release)
                   or cpu_fp8_kv_refusal(engine in V0_ENGINES, cpu_space, s.cache_type_k)
                   or cpu_refusal or _refusal(b, pool, gpu, s.ctx, cpu_space, longest) or kernel_refusal)
        placed = (gpus * n_gpu)[:n_gpu]
        ranks = [f"rank {i}: {t.name}, {t.capacity / GiB:.2f} GiB" for i, t in enumerate(placed)]
        steps = (*([Step("smallest rank", f"every rank budgets its own card ({'; '.join(ranks)}); the engine "
                         "gives each the smallest rank's KV blocks", f"rank {rank} ({gpu.name})",
                         "v1/core/kv_cache_utils.py unify_kv_cache_configs / get_kv_cache_configs")]
                   if len({_card(t) for t in placed}) > 1 else []),
                 *_explain_budget(model, weights, b, gpu, tp, pp, engine, space_step,
                                  explain_parallel(model, weights, s, tp, pp, n_gpu)),
                 *_explain_pool(pool, groups, mode, s.ctx, tp, engine))
        kv_bytes = pool.num_blocks * pool.bytes_per_block   # every rank allocates the smallest rank's blocks
        devices = tuple(
            DeviceMemory(g.name, g.kind, planned_free(g, b.utilization, b.graphs_on_top), b.weights, kv_bytes,
                         b.activation if i == 0 else b.activation_workers, b.non_torch + b.cuda_graphs)
            for i, g in enumerate((gpus * n_gpu)[:n_gpu])
        )
        host = next((t for t in targets if t.kind == "cpu"), None)
        if host is not None and gpus[0].kind != "cpu":
            swap, swap_refusal, swap_steps = host_swap(engine, vllm_swap_space(self._release()), tp,
                                                       host.total or host.capacity, s.vllm.swap_space)
            refusal = refusal or swap_refusal
            # V0's swap space is held as the host's overhead, not its KV cache: CacheEngine's cpu_cache is touched only
            # by swap_in / swap_out (a preempted sequence's blocks, copied back to the GPU before it runs again), and
            # the model runner is handed gpu_cache alone (vllm/worker/cache_engine.py; worker.py Worker.kv_cache
            # returns self.gpu_cache), so no decoded token reads it: as KV here the speed model shared every token's
            # KV read over it at RAM bandwidth (review23 #2: Mllama on 0.10 at 22.3 instead of 94.7 tokens/s).
            # The process's own host memory is not modelled.
            devices += (DeviceMemory(host.name, "cpu", host.capacity, 0, 0, 0, swap),)
            steps += swap_steps
        rec = recurrent_state_bytes(model)
        return Allocation(settings=s, devices=devices, kv_bytes_per_token=pool.bytes_per_token,
                          kv_cache_tokens=pool.tokens, max_concurrency=pool.max_concurrency, refusal=refusal,
                          steps=steps,
                          assumptions=(block_note if block_note and not pool.mamba_groups else
                                       f"block_size {pool.block_size}", f"max_num_batched_tokens {b.batched_tokens}",
                                       *([] if asked_share or gpu.kind == "cpu" else [utilization_words(release)]),
                                       f"max_num_seqs {b.num_seqs}", *([kernel_note] if kernel_note else []),
                                       *([] if settings.ctx or not (default_note := vllm_default_note(
                                           model, release.key if release else None)) else [default_note]),
                                       "CUDA graphs captured" if b.cuda_graphs else "--enforce-eager: no CUDA graphs",
                                       *([f"recurrent state: one padded page per request in each mamba group "
                                          f"(mamba_cache_mode {mode})"] if pool.mamba_groups else
                                         [f"recurrent state per sequence: {rec} B (not in this engine's KV pool)"]
                                         if rec else [])))

    def _cpu_backend(self, model: ModelSpec, s: Settings, gpu: Target, b: Budget
                     ) -> tuple[Budget, int, str | None, int | None, Step | None, str | None]:
        """(budget, block size, its note, KV space, its step, refusal) of vLLM's CPU backend (runtimes/vllm_cpu.py): its
        KV cache space by release, no CUDA graphs or NCCL workspaces; on a GPU the budget as it is and BLOCK_SIZE."""
        if gpu.kind != "cpu":
            return b, BLOCK_SIZE, None, None, None, None
        block, block_note = cpu_block_size(getattr(self, "version", None),
                                           any(a.kind == "mla" for a in model.attention_layers))
        cpu = (s.vllm.cpu_kvcache_space, cpu_kv_rule(getattr(self, "version", None)), gpu.total or gpu.capacity,
               b.utilization, b.weights + b.activation)
        cpu_space = cpu_kv_space(*cpu)
        space_step = kv_space_step(cpu_space, *cpu)
        cpu_refusal = cpu_kv_refusal(getattr(self, "version", None), cpu[0], cpu[2], gpu.capacity, *cpu[3:])
        b = replace(b, kv_memory=cpu_space, kv_memory_workers=cpu_space, cuda_graphs=0,
                    non_torch=0, budget=b.weights + b.activation + cpu_space)
        return b, block, block_note, cpu_space, space_step, cpu_refusal

    def pool_words(self, alloc: Allocation) -> str | None:
        """The pool's token count named as vLLM logs it where one request may be longer: before v0.21 a hybrid
        model's "GPU KV cache size" is num_blocks // KV-cache groups × block (review17 finding 11)."""
        step = next((st for st in alloc.steps if st.label == "KV tokens"), None)
        return "as vLLM logs its GPU KV cache size (per KV-cache group)" if step and " groups × " in step.formula else None

    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        from .published import serve_args  # the user's ./folder, a published checkpoint, else the Hub repo
        path, *online_fp8 = serve_args(model, s.quant)
        parts = ["vllm", "serve", path, "--max-model-len", str(s.ctx)]
        if s.vllm.gpu_memory_utilization and s.vllm.gpu_memory_utilization != vllm_default_utilization(self._release()):
            parts += ["--gpu-memory-utilization", f"{s.vllm.gpu_memory_utilization:g}"]
        if s.cache_type_k not in ("f16", "bf16"):
            parts += ["--kv-cache-dtype", s.cache_type_k]
        parts += online_fp8                             # --quantization fp8: a 16-bit checkpoint quantized at load
        if s.tp > 1:
            parts += ["--tensor-parallel-size", str(s.tp)]
        if s.pp > 1:
            parts += ["--pipeline-parallel-size", str(s.pp)]
        if s.parallel != PARALLEL_AUTO:                # --max-num-seqs 1 too: one sequence, as asked
            parts += ["--max-num-seqs", str(s.parallel)]
        if s.vllm.dp > 1:
            parts += ["--data-parallel-size", str(s.vllm.dp)]
        if s.vllm.expert_parallel:
            parts += ["--enable-expert-parallel"]
        if s.vllm.swap_space != VLLMOptions.swap_space and vllm_swap_space(self._release()):   # the default unsaid
            parts += ["--swap-space", f"{s.vllm.swap_space:g}"]
        if s.vllm.enable_lora:
            parts += ["--enable-lora", "--max-loras", str(s.vllm.max_loras), "--max-lora-rank", str(s.vllm.max_lora_rank)]
        if s.tp * s.pp > GPUS_PER_NODE:
            # more GPUs than one node holds: vLLM runs on a Ray cluster, TP inside a node, PP across nodes
            parts += ["--distributed-executor-backend", "ray"]
        line = self._for_release(parts)
        if s.vllm.cpu_kvcache_space:              # the CPU backend's KV cache (vllm/envs.py), an environment variable
            line = f"VLLM_CPU_KVCACHE_SPACE={s.vllm.cpu_kvcache_space} {line}"
        if s.tp * s.pp > GPUS_PER_NODE:
            nodes = -(-s.tp * s.pp // GPUS_PER_NODE)
            others = "node 2" if nodes == 2 else f"nodes 2–{nodes}"
            return f"ray start --head (node 1), ray start --address=<head>:6379 ({others}); then on the head: " + line
        return line

    def _mllama_words(self, model: ModelSpec, settings: Settings) -> tuple[str, ...]:
        """What the plan says of V0's Mllama start-up profile (vllm_mllama.py), and of the V1 → V0 fallback."""
        engine = self._engine_for(model)
        fallback = (f"vLLM {self._release_words()} falls back to V0 for Mllama (engine/arg_utils.py "
                    "_is_v1_supported_oracle: not is_v1_compatible): planned with V0's rules, --max-num-seqs 256 by "
                    "default",) if engine != self.engine else ()
        seqs = self.profiled_num_seqs(model, settings)
        p = mllama_profile(model, seqs, max(1, settings.tp)) if seqs else None
        return (*fallback, *([profile_words(p)] if p else []))

    def _release_words(self) -> str:
        release = self._release()
        return getattr(self, "version", None) or (release.text if release else "current")

    def profiled_num_seqs(self, model: ModelSpec, settings: Settings) -> int | None:
        """The max_num_seqs the start-up profile runs Mllama's vision encoder on, where --max-num-seqs is a lever for
        it (V0, vllm_mllama.py); None elsewhere."""
        if self._engine_for(model) not in V0_ENGINES or mllama_profile(model, 1) is None:
            return None
        return V0_MAX_NUM_SEQS if settings.parallel == PARALLEL_AUTO else settings.parallel

    def _engine_for(self, model: ModelSpec) -> str:
        """The engine this release runs the model on: V1 releases before 0.11 fall back to V0 for Mllama (an
        encoder-decoder, vllm_mllama.py), whose profile and --max-num-seqs 256 then apply."""
        release = self._release()
        if model.architecture == MLLAMA and self.engine not in V0_ENGINES and release and release.key < V0_FALLBACK_UNTIL:
            return "v0"
        return self.engine

    def served_context_cap(self, model: ModelSpec) -> int | None:
        """The longest max_model_len this release serves whatever --max-model-len asks (0.9.1: the tokenizer's
        model_max_length, context_limit.vllm_tokenizer_cap), or None: the plan's max context stops there."""
        release = self._release()
        cap = vllm_tokenizer_cap(model, release.key if release else None)
        return cap[0] if cap else None

    def _release(self) -> RuntimeVersion | None:
        """The named release (`--runtime vllm==X`, set by runtimes._versioned), None for the current one; a planner
        built for an older engine alone (VLLM("v0"), a replayed log) stands for that engine's first release."""
        version = getattr(self, "version", None)
        if version:
            return parse_version("vllm", version)
        if self.engine == DEFAULT_ENGINE:
            return None
        first = next(key for key, name, _ in VLLM_ENGINES if name == self.engine)
        return RuntimeVersion(f"{self.engine} engine", first)

    def _for_release(self, parts: list[str]) -> str:
        """`--runtime vllm==X`: the line as that release parses it, what it lacks in a comment (flag_spelling.py)."""
        from .flag_spelling import vllm_release_args
        version = getattr(self, "version", None)     # set by runtimes._versioned for a named release
        words, left_out = vllm_release_args(parts, parse_version("vllm", version).key if version else None)
        return " ".join(words) + (f"  # not in vLLM {version}: {', '.join(left_out)}" if left_out else "")
