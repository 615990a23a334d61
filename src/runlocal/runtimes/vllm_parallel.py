"""vLLM data parallel with MoE models (issue 18, point 5: "data parallel with expert parallel").

``--data-parallel-size N`` runs N engine replicas, each with its own KV pool, on N × TP × PP GPUs. Dense layers
(attention, dense MLPs, embeddings) are replicated on every replica, split 1/TP inside it. The MoE layers are
not: vLLM shards them over all DP × TP ranks (vllm/model_executor/layers/fused_moe/config.py
FusedMoEParallelConfig.make: ``flatten_tp_across_dp``, the experts' TP size is DP × TP), each expert split across
the ranks without ``--enable-expert-parallel`` and whole experts per rank (EP size DP × TP, TP 1) with it — the
same bytes per GPU either way. So one GPU holds dense/(TP·PP) + experts/(DP·TP·PP).

The expert bytes are the weights' share in proportion to the expert parameters (exact for a checkpoint in one
dtype; an estimate when experts and the rest are quantized differently). Pure: no I/O.
"""

from __future__ import annotations

from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from .base import Settings, Step


def expert_bytes(model: ModelSpec, weights: WeightEstimate) -> int:
    """The routed experts' share of the weight bytes, by parameter count."""
    params = model.params
    expert = sum(t.numel for t in model.tensors if t.role.startswith("expert_"))
    return weights.total * expert // params if params else 0


def weights_per_gpu(model: ModelSpec, weights: WeightEstimate, tp: int, pp: int, dp: int) -> int:
    """One GPU's weight bytes under DP replicas: dense parts per replica rank, MoE parts over all DP × TP ranks."""
    experts = expert_bytes(model, weights) if model.n_experts else 0
    return (weights.total - experts) // (tp * pp) + experts // (dp * tp * pp)


def explain_parallel(model: ModelSpec, weights: WeightEstimate, s: Settings, tp: int, pp: int,
                     n_gpu: int) -> tuple[Step, ...]:
    """The --explain steps of LoRA slots and data parallelism (both inside the weights per GPU)."""
    steps: tuple[Step, ...] = ()
    if s.vllm.enable_lora:
        from .vllm_lora import lora_slot_bytes, not_covered

        left = not_covered(model)
        steps += (Step("LoRA slots", f"{s.vllm.max_loras} × rank {s.vllm.max_lora_rank} A/B stacks of every attention and MLP "
                       f"linear (in the weights per GPU above){'; not counted: ' + ', '.join(left) if left else ''}",
                       f"{lora_slot_bytes(model, s.vllm.max_loras, s.vllm.max_lora_rank, tp, pp):,} B",
                       "vllm/lora/layers/base_linear.py create_lora_weights"),)
    if s.vllm.dp > 1:
        steps += (Step("data parallel", f"{s.vllm.dp} engine replicas of TP {tp} × PP {pp}, each with the KV pool below "
                       f"and its own requests (the deployment serves {s.vllm.dp} × the concurrency below); MoE layers "
                       f"sharded over all {s.vllm.dp * tp} DP × TP ranks"
                       + (", whole experts per rank (--enable-expert-parallel)" if s.vllm.expert_parallel else "")
                       + f": weights per GPU = dense / (TP × PP) + {expert_bytes(model, weights):,} B of experts / "
                       f"({s.vllm.dp} × TP × PP)",
                       f"{n_gpu} GPUs", "vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make"),)
    return steps
