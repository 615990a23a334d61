"""What one token touches: the share of the weights a decoded token reads and the FLOPs a prompt token costs.

Pure functions of the model's tensors (and, for MoE prompts on CUDA, the device's tile rule); hardware/speed.py
turns them into seconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memo import IdMemo, per_model
from .backend_speed import expert_tile_factor

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec
    from .catalog import Device

UBATCH = 512                         # llama.cpp default micro-batch: CPU-resident weights cross PCIe once per ubatch
FLOAT_QUANTS = {"F32", "F16", "BF16", "FP16", "FP32", "FLOAT16", "BFLOAT16", "FLOAT32"}


def is_float_quant(quant: str | None) -> bool:
    return (quant or "BF16").upper() in FLOAT_QUANTS


# --- what a token touches --------------------------------------------------------------------------------

_SKIP_ROLES = {"vision", "projector", "audio", "pos_embed"}


def _share(model: ModelSpec, t) -> float:
    role = t.role
    if role in _SKIP_ROLES:
        return 0.0
    if role == "embed":
        return 1.0 if model.tie_word_embeddings else 0.0
    if role.startswith("expert_") and model.n_experts:
        return (model.n_experts_active or model.n_experts) / model.n_experts
    return 1.0


@per_model
def read_fraction(model: ModelSpec) -> float:
    """Share of the weight bytes one decoded token reads: routed experts count n_active/n_experts, the input
    embedding one row (all of it when tied to the output head), vision/audio towers nothing. Tensor element
    counts stand in for bytes (the quant mix is close to uniform over the large matrices)."""
    total = read = 0.0
    for t in model.tensors:
        total += t.numel
        read += t.numel * _share(model, t)
    if not total:
        return model.active_params / model.params if model.params else 1.0
    return read / total


def embedding_share(model: ModelSpec, quant: str | None = None) -> float:
    """Share of the weights in the input embedding table. A token reads one row of it; llama.cpp keeps it in
    RAM, and a tied output head is a second copy on the GPU. By bytes where ``quant`` is a GGUF type: llama-quantize
    gives the embedding its own type (a tied one takes the output's, Q6_K under Q4_0 — src/llama-quant.cpp), so its
    share of the bytes is not its share of the elements (gemma-3-4b Q4_0: 23.4 % against 17.3 %)."""
    return _EMBED_SHARE.get(model, quant, lambda: _embedding_share(model, quant))


_EMBED_SHARE = IdMemo(256)


def _embedding_share(model: ModelSpec, quant: str | None) -> float:
    view = _gguf_typed(model, quant)
    tensors = view.tensors if view is not None else model.tensors
    size = (lambda t: t.nbytes or 0) if view is not None else (lambda t: t.numel)
    total = sum(size(t) for t in tensors)
    return sum(size(t) for t in tensors if t.role == "embed") / total if total else 0.0


def _gguf_typed(model: ModelSpec, quant: str | None) -> ModelSpec | None:
    """The model with each tensor's stored bytes: as read from a file, or as llama-quantize types it under ``quant``;
    None where neither is known (a checkpoint under vLLM's fp8, AWQ, MLX's 4bit …: gguf_view answers None)."""
    from ..model.spec import GGUF_NAME
    # a spec read from a GGUF (its tensors GGUF-named) has its stored bytes; one read from safetensors or the Hub has
    # the checkpoint's (BF16), not the quant's
    if (model.tensors and all(t.nbytes for t in model.tensors)
            and any(GGUF_NAME.match(t.name) for t in model.tensors)):
        return model
    if not quant:
        return None
    from ..quant.gguf_mix import gguf_view

    return gguf_view(model, quant)


EXPERT_ROLES = ("expert_gate", "expert_up", "expert_down", "expert_gate_up")


def routed_expert_types(model: ModelSpec, quant: str | None) -> dict[str, int] | None:
    """ggml type → how many routed-expert tensors (ffn_*_exps) have it, as the file stores them or llama-quantize
    types them under ``quant`` (quant/gguf_mix: Q4_K_M's use_more_bits gives about half the layers' ffn_down_exps
    Q6_K); None where the typed view is unknown."""
    view = _gguf_typed(model, quant)
    if view is None:
        return None
    types: dict[str, int] = {}
    for t in view.tensors:
        if t.role in EXPERT_ROLES and t.dtype:
            types[t.dtype] = types.get(t.dtype, 0) + 1
    return types or None


@per_model
def rest_read_fraction(model: ModelSpec) -> float:
    """read_fraction over everything but the input embedding: the share of a device's non-embedding weights
    one token reads (a tied output head counts as the embedding-sized matrix it multiplies by)."""
    rest = read = 0.0
    for t in model.tensors:
        if t.role == "embed":
            read += t.numel if model.tie_word_embeddings else 0.0
            continue
        rest += t.numel
        read += t.numel * _share(model, t)
    if not rest:
        return read_fraction(model)
    return min(1.0, read / rest)


@per_model
def active_matmul_params(model: ModelSpec) -> int:
    """Weights multiplied per token (2 FLOPs each): the matrices read_fraction counts."""
    if not model.tensors:
        return model.active_params
    return int(sum(t.numel * _share(model, t) for t in model.tensors if len(t.shape) >= 2))


def expert_factor(model: ModelSpec, dev: Device | None, quant: str | None, backend: str | None,
                  ubatch: int = UBATCH, coopmat2: bool | None = None) -> float:
    """backend_speed.expert_tile_factor for this model on this device: on CUDA an expert's MMQ tiles, on Vulkan its
    mul_mm_id tiles run whole for the few tokens routed to it (1.0 for a dense model and elsewhere); ``coopmat2``: the
    Vulkan driver path where a record states it (None: NVIDIA Turing+ has it)."""
    return expert_tile_factor(model.n_experts, model.n_experts_active, ubatch, backend,
                              dev.vendor if dev is not None else None, not is_float_quant(quant),
                              dev.compute_capability if dev is not None else None, coopmat2)


def prefill_matmul_flops(model: ModelSpec, dev: Device | None, quant: str | None, backend: str | None,
                         ubatch: int = UBATCH, coopmat2: bool | None = None) -> float:
    """Matmul FLOPs a prompt token costs at the dense rate: 2 per active weight, the routed experts' × their tile
    factor (expert_factor)."""
    return 2.0 * active_matmul_params(model) + padding_flops(model, expert_factor(model, dev, quant, backend, ubatch,
                                                                                coopmat2))


def padding_flops(model: ModelSpec, factor: float) -> float:
    """The FLOPs a prompt token's routed experts add beyond their own at ``factor`` (their tiles' padding)."""
    return 0.0 if factor == 1.0 else 2.0 * (factor - 1.0) * routed_expert_params(model)


@per_model
def routed_expert_params(model: ModelSpec) -> float:
    """Routed-expert weights multiplied per token (n_active / n_experts of the expert stacks): MUL_MAT_ID's share."""
    return sum(t.numel * _share(model, t) for t in model.tensors if len(t.shape) >= 2 and t.role.startswith("expert_"))


def attention_flops_per_token(model: ModelSpec, ctx: float) -> float:
    """QKᵀ and AV against ``ctx`` cached tokens: 4 × heads × head width × ctx per attention layer
    (a sliding layer sees at most its window)."""
    total = 0.0
    for att in model.attention_layers:
        n = min(ctx, att.window) if att.window else ctx
        total += 4 * model.n_heads * att.k_dim * n
    return total


def attention_product_flops(model: ModelSpec, ctx: float) -> tuple[float, float]:
    """The two products of attention against ``ctx`` cached tokens, apart: (Q·Kᵀ, softmax·V) FLOPs per token,
    2 × heads × K width × ctx and 2 × heads × V width × ctx per attention layer (a sliding layer: its window). Apart
    because llama.cpp's CUDA FlashAttention kernel accumulates them at different precisions (hardware/fa_prefill.py);
    for a model whose K and V widths match they sum to attention_flops_per_token."""
    kq = vkq = 0.0
    for att in model.attention_layers:
        n = min(ctx, att.window) if att.window else ctx
        kq += 2 * model.n_heads * att.k_dim * n
        vkq += 2 * model.n_heads * att.v_dim * n
    return kq, vkq


def time_to_first_token(prompt_tokens: int, prefill_tokens_per_s: float | None) -> float | None:
    """Seconds to the first token: the prompt at the prefill rate (its last micro-batch's logits give the token)."""
    return prompt_tokens / prefill_tokens_per_s if prefill_tokens_per_s else None


def prompt_over_context(prompt: int, ctx: int) -> str:
    return f"not predicted: the {prompt:,}-token prompt does not fit the {ctx:,}-token context"
