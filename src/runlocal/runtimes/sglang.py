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
  the server starts and refuses or truncates longer requests.
"""

from __future__ import annotations

import math

from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from .base import GPUS_PER_NODE, Allocation, DeviceMemory, Levers, Settings, Step, Target

MiB = 1 << 20
GiB = 1 << 30
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


def graph_reserve_mib(decode_max_bs: int, chunked: int, mla: bool) -> float:
    """arg_groups/memory_hook.py reserve_for_graph_mb: decode graphs (FULL by default) 2 MiB per max_bs;
    prefill graphs (BREAKABLE by default on CUDA, cuda_graph_config.py default_prefill_backend) 8 MiB per
    captured size, or 1.5 GiB with an MLA backend."""
    prefill_max_bs = min(8192, chunked) if mla else chunked
    return decode_max_bs * 2 + (1.5 * 1024 if mla else len(prefill_graph_sizes(prefill_max_bs)) * 8)


def reserved_mem_mib(gpu_mem_mib: float, chunked: int, decode_max_bs: int, tp: int, pp: int, mla: bool) -> float:
    """arg_groups/memory_hook.py: reserved_mem for activations, CUDA graphs and parallel slack (MiB)."""
    activation_tokens = max(chunked, 2048) if chunked > 0 else max(MAX_PREFILL_TOKENS, 2048)
    reserved = 512 + activation_tokens * 1.5 + tp * pp / 8 * 1024 + graph_reserve_mib(decode_max_bs, chunked, mla)
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return reserved


def default_mem_fraction_static(gpu_mem_mib: float, chunked: int, decode_max_bs: int, tp: int, pp: int,
                                mla: bool) -> float:
    reserved = reserved_mem_mib(gpu_mem_mib, chunked, decode_max_bs, tp, pp, mla)
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)


def _kv_dtype(name: str) -> tuple[str, int] | None:
    key = name.strip().lower()
    if key in KV_DTYPES:
        return ("fp8_e4m3" if key == "fp8" else key), KV_DTYPES[key]
    return None


class SGLang:
    name = "sglang"
    pools_kv = True
    levers = Levers(weight_quants=("fp8",), kv_cache_types=("fp8",), budget="mem_fraction_static",
                    tensor_parallel=True)   # --quantization fp8, --kv-cache-dtype fp8_e5m2, --tp

    def _gpus(self, targets: list[Target]) -> list[Target]:
        return [t for t in targets if t.kind == "gpu"]

    def _gpu_mem_mib(self, gpus: list[Target]) -> float | None:
        # get_nvgpu_memory_capacity: nvidia-smi memory.total, the minimum over GPUs, in MiB
        return min((t.total or t.capacity) for t in gpus) / MiB if gpus else None

    def _decode_max_bs(self, gpu_mem: float | None, tp: int, max_running: int | None) -> int:
        bs = gpu_memory_defaults(gpu_mem, tp)[1] if gpu_mem is not None else 160
        return min(bs, max_running) if max_running else bs

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        gpus = self._gpus(targets)
        tp, pp = max(1, settings.tp), max(1, settings.pp)
        gpu_mem = self._gpu_mem_mib(gpus)
        mla = any(a.kind == "mla" for a in model.attention_layers)
        chunked = settings.max_num_batched_tokens or (gpu_memory_defaults(gpu_mem, tp)[0] if gpu_mem else 4096)
        max_running = settings.parallel if settings.parallel > 1 else None
        frac = settings.mem_fraction_static
        if frac is None:
            frac = (default_mem_fraction_static(gpu_mem, chunked, self._decode_max_bs(gpu_mem, tp, max_running),
                                                tp, pp, mla) if gpu_mem else 0.95)
        k = _kv_dtype(settings.cache_type_k)
        return settings.with_(
            ctx=settings.ctx or model.max_position_embeddings or 4096,   # --context-length: config.json by default
            max_num_batched_tokens=chunked, mem_fraction_static=frac,
            cache_type_k=k[0] if k else settings.cache_type_k, cache_type_v=k[0] if k else settings.cache_type_v,
        )

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        s = self.defaults(model, settings, targets)
        assert s.ctx is not None                # set by defaults()
        gpus = self._gpus(targets)
        tp, pp = max(1, s.tp), max(1, s.pp)
        steps: list[Step] = []
        assumptions: list[str] = [f"{SGLANG_REF} defaults; page_size {PAGE_SIZE}; no speculative decoding"]
        refusal: str | None = None
        if not gpus:
            gpus = [t for t in targets if t.kind == "unified"][:1] or targets[:1]
            refusal = "SGLang needs a CUDA or ROCm GPU; none was given"
        n_gpu = min(len(gpus), tp * pp) or 1
        gpu = min(gpus[:n_gpu], key=lambda t: t.capacity)
        gpu_mem = self._gpu_mem_mib(gpus) or gpu.capacity / MiB
        mla = any(a.kind == "mla" for a in model.attention_layers)
        chunked = s.max_num_batched_tokens or 0
        max_running = s.parallel if s.parallel > 1 else None
        decode_bs = self._decode_max_bs(gpu_mem, tp, max_running)
        frac = s.mem_fraction_static or 0.9

        if settings.mem_fraction_static is None:
            reserved = reserved_mem_mib(gpu_mem, chunked, decode_bs, tp, pp, mla)
            graph_mib = graph_reserve_mib(decode_bs, chunked, mla)
            steps.append(Step("mem_fraction_static",
                              f"(GPU {gpu_mem:,.0f} MiB − reserved {reserved:,.0f} MiB) / GPU; reserved = 512 + 1.5 × "
                              f"max(chunked {chunked}, 2048) + TP·PP/8 × 1024 + graphs {graph_mib:,.0f}"
                              + (" (≥ 10 GiB above 60 GiB)" if gpu_mem > 60 * 1024 else ""),
                              f"{frac}", f"python/sglang/srt/arg_groups/memory_hook.py ({SGLANG_REF})"))
        else:
            steps.append(Step("mem_fraction_static", "set with --mem-fraction-static", f"{frac}"))
        steps.append(Step("chunked prefill / decode graphs",
                          f"by GPU memory {gpu_mem:,.0f} MiB and TP {tp}", f"chunked_prefill_size {chunked}, "
                          f"cuda graph max_bs {decode_bs}", "arg_groups/memory_hook.py handle_gpu_memory_settings"))

        # --- KV dtype ---------------------------------------------------------------------------
        kd = _kv_dtype(s.cache_type_k)
        if kd is None or (s.cache_type_v != s.cache_type_k and _kv_dtype(s.cache_type_v) != kd):
            bad = s.cache_type_k if kd is None else s.cache_type_v
            refusal = refusal or (f"--kv-cache-dtype {bad}: SGLang takes one dtype for K and V "
                                  f"(auto, bf16, fp8_e5m2, fp8_e4m3)")
            kd = kd or ("auto", 2)
        kv_size = kd[1]

        # --- the budget -------------------------------------------------------------------------
        dist = DIST_INIT_TP if tp > 1 else DIST_INIT_PP if pp > 1 else 0
        pre = max(0, gpu.capacity - CUDA_CONTEXT - dist)
        budget = int(pre * frac)
        w = weights.total // (tp * pp)
        rest = budget - w
        steps.append(Step("static budget", f"free before weights {pre:,} B (free {gpu.capacity:,} − CUDA context "
                          f"{CUDA_CONTEXT // MiB} MiB" + (f" − distributed init {dist / GiB:.2f} GiB" if dist else "")
                          + f") × {frac}", f"{budget:,} B",
                          "mem_cache/kv_cache_configurator.py _profile_available_bytes; model_runner.py "
                          "init_torch_distributed (logged mem usage)"))
        steps.append(Step("weights per GPU", f"{weights.total:,} B / (TP {tp} × PP {pp})", f"{w:,} B"))

        # --- bytes per token --------------------------------------------------------------------
        layers = model.attention_layers
        layers = layers[: -(-len(layers) // pp)] if pp > 1 else layers
        full_cell = swa_cell = 0
        for a in layers:
            if a.kind == "mla":
                per = a.k_dim * kv_size      # calculate_mla_kv_cache_dim: kv_lora_rank + qk_rope_head_dim, not split by TP
            else:
                per = max(1, a.n_kv_heads // tp) * (a.k_dim + a.v_dim) * kv_size   # ModelConfig.get_num_kv_heads
            if a.kind == "sliding":
                swa_cell += per
            else:
                full_cell += per
        hybrid = bool(swa_cell and full_cell)
        if hybrid:
            cell = full_cell + SWA_FULL_TOKENS_RATIO * swa_cell
            cell_formula = f"full {full_cell:,} + {SWA_FULL_TOKENS_RATIO} × SWA {swa_cell:,} B/token"
        else:
            cell = full_cell + swa_cell
            cell_formula = f"{cell:,} B/token ({len(layers)} layers, {kd[0]})"
        tokens = int(max(0, rest) // cell) // PAGE_SIZE * PAGE_SIZE if cell else 0
        swa_tokens = int(tokens * SWA_FULL_TOKENS_RATIO) // PAGE_SIZE * PAGE_SIZE if hybrid else 0
        kv_bytes = tokens * full_cell + swa_tokens * swa_cell if hybrid else tokens * int(cell)
        steps.append(Step("KV pool tokens", f"(budget − weights) {max(0, rest):,} B / {cell_formula}",
                          f"{tokens:,}" + (f" (SWA pool {swa_tokens:,})" if hybrid else ""),
                          "model_executor/pool_configurator.py calculate_pool_sizes"))

        if refusal is None:
            if w > pre:
                refusal = (f"weights per GPU ({w / GiB:.2f} GiB) exceed the free memory ({pre / GiB:.2f} GiB): "
                           "loading fails with CUDA out of memory")
            elif rest <= 0:
                minimum = 1 - (pre - w) / pre if pre else 1.0
                refusal = (f"Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={frac}. "
                           f"Raise --mem-fraction-static above {math.ceil(minimum * 1000) / 1000:.3f}")
            elif tokens <= 0:
                refusal = ("Not enough memory. Please try to increase --mem-fraction-static. "
                           f"Current value: mem_fraction_static={frac}")
        if tokens and tokens < s.ctx:
            assumptions.append(f"KV pool holds {tokens:,} tokens, fewer than --context-length {s.ctx:,}: SGLang "
                               "starts (managers/tp_worker.py warns) but refuses or truncates longer requests")

        # --- what lives outside the static budget -----------------------------------------------
        if max_running:
            max_reqs = min(max_running, max(1, tokens // 2))
        else:
            # kv_cache_configurator.py resolve_max_num_reqs
            max_reqs = min(max(min(int(tokens / s.ctx * 512) if s.ctx else 0, 4096), 2048), max(1, tokens // 2))
        req_to_token = (max_reqs + 1) * (s.ctx + REQ_TO_TOKEN_EXTRA) * 4
        steps.append(Step("req_to_token pool", f"({max_reqs:,} requests + 1) × (context {s.ctx:,} + 4) × int32",
                          f"{req_to_token:,} B", "mem_cache/memory_pool.py ReqToTokenPool"))
        inter = model.intermediate_size or 4 * model.hidden_size
        # one prefill chunk through a layer: hidden-sized tensors (input, residual, normed, output) and the MLP's
        # fused gate_up output + its activation (3 × intermediate / TP), bf16; logits only for last tokens
        activation = chunked * (4 * model.hidden_size + 3 * inter // tp) * 2
        graphs = int(graph_reserve_mib(decode_bs, chunked, mla) * MiB) if not s.enforce_eager else 0
        steps.append(Step("activations + CUDA graphs",
                          f"chunk {chunked} × (4×{model.hidden_size} + 3×{inter}/TP) × 2 B + SGLang's graph reserve",
                          f"{activation + graphs:,} B", "arg_groups/memory_hook.py reserve_for_graph_mb"))

        devices = tuple(
            DeviceMemory(g.name, g.kind, g.capacity, w, kv_bytes, activation + graphs,
                         CUDA_CONTEXT + dist + CUBLAS_WORKSPACE + req_to_token)
            for g in (gpus * n_gpu)[:n_gpu]
        )
        host = next((t for t in targets if t.kind == "cpu"), None)
        if host is not None and gpus:
            # no KV on the host unless --enable-hierarchical-cache (off by default, server_args.py); the server
            # process itself (Python, torch, CUDA host state) is not modelled
            devices += (DeviceMemory(host.name, "cpu", host.capacity, 0, 0, 0, 0),)
            assumptions.append("host: no KV cache in RAM (hierarchical cache off); the process itself not modelled")
        concurrency = tokens / s.ctx if s.ctx else None
        if any(model.recurrent_layers):
            assumptions.append("mamba / linear-attention state pool not modelled")
        if hybrid:
            assumptions.append(f"hybrid SWA pool: SWA layers get {SWA_FULL_TOKENS_RATIO} × the full layers' tokens")
        return Allocation(settings=s, devices=devices, kv_bytes_per_token=int(cell), kv_cache_tokens=tokens,
                          max_concurrency=concurrency, refusal=refusal, steps=tuple(steps),
                          assumptions=(*assumptions,
                                       f"CUDA context {CUDA_CONTEXT // MiB} MiB + cuBLAS {CUBLAS_WORKSPACE // MiB} MiB "
                                       "per GPU (measured, H100)"
                                       + (f" + distributed init {dist / GiB:.2f} GiB (logged by SGLang)" if dist else ""),
                                       "vision-language models: mem_fraction_static lowered further by SGLang (not modelled)"))

    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        from .published import serve_path  # the user's ./folder kept, else the Hub repo

        parts = ["python", "-m", "sglang.launch_server", "--model-path", serve_path(model)]
        if s.ctx:
            parts += ["--context-length", str(s.ctx)]
        if s.mem_fraction_static is not None:
            parts += ["--mem-fraction-static", f"{s.mem_fraction_static:g}"]
        if s.quant and s.quant.lower() in ("fp8", "fp8_e4m3") and (model.file_quant or "").lower() != "fp8":
            parts += ["--quantization", "fp8"]          # server_args.py: online fp8 of a 16-bit checkpoint
        kd = _kv_dtype(s.cache_type_k)
        if kd and kd[0] not in ("auto", "f16", "fp16", "float16", "bf16", "bfloat16"):
            parts += ["--kv-cache-dtype", kd[0]]
        if s.tp > 1:
            parts += ["--tp-size", str(s.tp)]
        if s.pp > 1:
            parts += ["--pp-size", str(s.pp)]
        if s.parallel > 1:
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


__all__ = ["SGLang", "default_mem_fraction_static", "gpu_memory_defaults", "prefill_graph_sizes"]
