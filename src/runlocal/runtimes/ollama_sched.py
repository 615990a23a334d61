"""Ollama's scheduler rules that need no planner: the default context tier by VRAM (server/routes.go Serve), the
VRAM prediction (llm/llama_server.go PredictServerVRAM) and the automatic generation batch (server/sched.go
automaticGenerationBatch). Moved out of runtimes/ollama.py whole; it re-exports them. Pure computation.
"""

from __future__ import annotations

from ..model.spec import ModelSpec
from ..units import GiB, MiB

# server/routes.go Serve (v0.15.5+): "Use slightly lower thresholds (47/23 GiB vs. 48/24 GiB)".
CTX_TIERS = ((47 * GiB, 262144), (23 * GiB, 32768), (0, 4096))
# server/sched.go: llamaServerGenerationBatch* constants and generationBatchSurcharge.
BATCH_DEFAULT, BATCH_CONSTRAINED, BATCH_MEDIUM, BATCH_LARGE = 512, 256, 1024, 2048
SURCHARGE = {BATCH_LARGE: 2 * GiB, BATCH_MEDIUM: 768 * MiB}
HEADROOM_PERCENT = {BATCH_LARGE: 60, BATCH_MEDIUM: 75}


def default_num_ctx(total_vram: int) -> int:
    """server/routes.go Serve: the default context tier for the summed (total − OLLAMA_GPU_OVERHEAD) VRAM."""
    return next(ctx for floor, ctx in CTX_TIERS if total_vram >= floor)


def predicted_vram(model: ModelSpec, weight_bytes: int, ctx_total: int) -> int:
    """llm/llama_server.go PredictServerVRAM: file size + an f16 KV estimate from the smallest KV head count."""
    kv_heads = min((a.n_kv_heads for a in model.attention_layers), default=1) or 1
    head_dim = model.hidden_size // max(1, model.n_heads)
    return weight_bytes + 2 * model.n_layers * kv_heads * head_dim * ctx_total * 2


def automatic_batch(ctx_total: int, predicted: int, available: int, *, flash_off_on_cuda: bool,
                    small_cuda_gpu: bool) -> int:
    """server/sched.go automaticGenerationBatch: -b/-ub for completion models when num_batch is not set."""
    if flash_off_on_cuda:
        # constrainedCUDAWithoutFlashAttention: context > 4096 on a CUDA GPU with ≤ 8 GiB
        return BATCH_CONSTRAINED if (ctx_total > 4096 and small_cuda_gpu) else BATCH_DEFAULT
    batch = BATCH_LARGE if ctx_total > 32768 else BATCH_MEDIUM if ctx_total > 4096 else BATCH_DEFAULT

    def fits(b: int) -> bool:     # generationBatchFits
        if predicted == 0 or available == 0:
            return True
        threshold = available * 80 // 100
        if predicted > threshold:
            return False
        if predicted > available * HEADROOM_PERCENT.get(b, 100) // 100:
            return False
        return SURCHARGE.get(b, 0) <= threshold - predicted

    while batch > BATCH_DEFAULT and not fits(batch):
        batch = BATCH_MEDIUM if batch > BATCH_MEDIUM else BATCH_DEFAULT   # nextLowerGenerationBatch
    return batch


__all__ = ["BATCH_CONSTRAINED", "BATCH_DEFAULT", "BATCH_LARGE", "BATCH_MEDIUM", "CTX_TIERS", "HEADROOM_PERCENT",
           "SURCHARGE", "automatic_batch", "default_num_ctx", "predicted_vram"]
