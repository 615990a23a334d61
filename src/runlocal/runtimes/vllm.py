"""vLLM (V1 engine): a memory budget, a profiled activation peak, and a KV pool from what is left.

vllm/v1/worker/gpu_worker.py (determine_available_memory): KV memory =
    total × gpu_memory_utilization − (weights + peak activation + non-torch memory [+ CUDA graphs]),
vllm/v1/core/kv_cache_utils.py: tokens = KV memory / (block_size × bytes per token per block over
layers), reported as "GPU KV cache size: N tokens" and "Maximum concurrency for L tokens per
request: X"; engine start fails when max_model_len needs more than the pool holds.
Tensor parallel splits weights and KV heads over GPUs; KV heads are replicated when fewer than TP.
"""

from __future__ import annotations

from ..kv import layer_kv, normalize_cache_type, recurrent_state_bytes
from ..model.spec import AttentionSpec, ModelSpec
from ..quant.formats import WeightEstimate
from .base import Allocation, DeviceMemory, Settings, Step, Target

MiB = 1 << 20
GiB = 1 << 30
DEFAULT_UTILIZATION = 0.9            # vllm/config/cache.py: gpu_memory_utilization
DEFAULT_MAX_NUM_SEQS = 256           # vllm/engine/arg_utils.py (GPU, OpenAI server)
DEFAULT_MAX_BATCHED_TOKENS = 8192    # vllm/engine/arg_utils.py: server default with chunked prefill
BLOCK_SIZE = 16                      # vllm/config/cache.py: block_size on CUDA
NON_TORCH_BYTES = 700 * MiB          # CUDA context + cuBLAS/NCCL workspaces seen in vLLM start-up logs
CUDA_GRAPH_BYTES = 600 * MiB         # typical "Graph capturing finished … took X GiB" for 7–14B models


class VLLM:
    name = "vllm"
    pools_kv = True

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        return settings.with_(
            ctx=settings.ctx or model.max_position_embeddings or 4096,
            gpu_memory_utilization=settings.gpu_memory_utilization or DEFAULT_UTILIZATION,
            max_num_batched_tokens=settings.max_num_batched_tokens or DEFAULT_MAX_BATCHED_TOKENS,
            cache_type_k=normalize_cache_type(settings.cache_type_k, field="kv-cache-dtype"),
            cache_type_v=normalize_cache_type(settings.cache_type_v, field="kv-cache-dtype"),
        )

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        s = self.defaults(model, settings, targets)
        gpus = [t for t in targets if t.kind != "cpu"] or targets[:1]
        tp = max(1, s.tp)
        n_gpu = min(len(gpus), tp * max(1, s.pp)) or 1
        gpu = gpus[0]
        util = s.gpu_memory_utilization
        budget = int(gpu.capacity * util)
        w = weights.total // (tp * max(1, s.pp))
        tokens = s.max_num_batched_tokens
        # Profiled peak of one forward pass over max_num_batched_tokens (hidden states, MLP
        # intermediates in the model dtype) plus the sampler's f32 logits for max_num_seqs rows.
        inter = model.intermediate_size or 4 * model.hidden_size
        activation = tokens * (4 * model.hidden_size + 2 * inter // tp) * 2 + min(tokens, DEFAULT_MAX_NUM_SEQS) * model.vocab_size * 4
        graphs = 0 if s.enforce_eager else CUDA_GRAPH_BYTES
        kv_memory = budget - w - activation - NON_TORCH_BYTES - graphs

        def per_token_bytes(a: AttentionSpec) -> int:
            heads = max(1, -(-a.n_kv_heads // tp)) if a.kind != "mla" else 1
            lk = layer_kv(AttentionSpec(a.kind, heads, a.k_dim, a.v_dim, a.window), s.cache_type_k, s.cache_type_v,
                          store_v=a.kind != "mla")
            return lk.k_bytes + (lk.v_bytes if a.kind != "mla" else 0)

        layers = model.attention_layers[: len(model.attention_layers) // max(1, s.pp) or None]
        per_token = sum(per_token_bytes(a) for a in layers)
        per_block = per_token * BLOCK_SIZE
        kv_tokens = max(0, kv_memory) // per_block * BLOCK_SIZE if per_block else 0
        rec = recurrent_state_bytes(model)
        need = s.ctx
        concurrency = kv_tokens / need if need else None
        refusal = None
        if kv_memory <= 0:
            refusal = ("No available memory for the cache blocks: weights and activations exceed "
                       f"gpu_memory_utilization {util} of {gpu.name}")
        elif kv_tokens < need:
            refusal = (f"max_model_len {need:,} needs more KV cache than the {kv_tokens:,} tokens that fit "
                       f"(vLLM refuses to start)")
        steps = (
            Step("budget", f"{gpu.capacity:,} B × gpu_memory_utilization {util}", f"{budget:,} B", "vllm/v1/worker/gpu_worker.py"),
            Step("weights per GPU", f"{weights.total:,} B / (TP {tp} × PP {s.pp})", f"{w:,} B"),
            Step("activation peak", f"{tokens} tokens × (4×{model.hidden_size} + 2×{inter}/TP) × 2 B + logits", f"{activation:,} B",
                 "profile_run over max_num_batched_tokens"),
            Step("non-torch + CUDA graphs", f"{NON_TORCH_BYTES:,} + {graphs:,} B", f"{NON_TORCH_BYTES + graphs:,} B"),
            Step("KV pool", f"budget − weights − activation − non-torch − graphs", f"{max(0, kv_memory):,} B"),
            Step("KV tokens", f"pool / ({per_token:,} B/token × block {BLOCK_SIZE}) × {BLOCK_SIZE}", f"{kv_tokens:,}",
                 "vllm/v1/core/kv_cache_utils.py"),
        )
        devices = tuple(
            DeviceMemory(g.name, g.kind, g.capacity, w, max(0, kv_memory), activation, NON_TORCH_BYTES + graphs)
            for g in (gpus * n_gpu)[:n_gpu]
        )
        return Allocation(settings=s, devices=devices, kv_bytes_per_token=per_token, kv_cache_tokens=kv_tokens,
                          max_concurrency=concurrency, refusal=refusal, steps=steps,
                          assumptions=(f"block_size {BLOCK_SIZE}", f"max_num_batched_tokens {tokens}",
                                       "CUDA graphs captured" if graphs else "--enforce-eager: no CUDA graphs",
                                       *(["recurrent state per sequence: %d B" % rec] if rec else [])))

    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        parts = ["vllm", "serve", model.repo_id or model.id, "--max-model-len", str(s.ctx)]
        if s.gpu_memory_utilization and s.gpu_memory_utilization != DEFAULT_UTILIZATION:
            parts += ["--gpu-memory-utilization", f"{s.gpu_memory_utilization:g}"]
        if s.cache_type_k not in ("f16", "bf16"):
            parts += ["--kv-cache-dtype", s.cache_type_k]
        if s.tp > 1:
            parts += ["--tensor-parallel-size", str(s.tp)]
        if s.parallel > 1:
            parts += ["--max-num-seqs", str(s.parallel)]
        return " ".join(parts)
