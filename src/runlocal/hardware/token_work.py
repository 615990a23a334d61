"""What one token touches: the share of the weights a decoded token reads and the FLOPs a prompt token costs.

Pure functions of the model's tensors (and, for MoE prompts on CUDA, the device's tile rule); hardware/speed.py
turns them into seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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


# a routed expert's bias (gpt-oss: ffn_gate_exps.bias, HF mlp.experts.gate_up_proj_bias) is one row per expert, read
# for the experts a token reaches only; a shared expert's (shared_experts., ffn_*_shexp) is read whole
_EXPERT_BIAS = re.compile(r"_exps\.|\.experts\.")


def _routed(model: ModelSpec, t) -> bool:
    """A routed expert's tensor or bias: a token reads the n_active of n_experts it reaches."""
    return bool(model.n_experts) and (t.role.startswith("expert_")
                                      or (t.role == "bias" and _EXPERT_BIAS.search(t.name) is not None))


def _share(model: ModelSpec, t) -> float:
    role = t.role
    if role in _SKIP_ROLES:
        return 0.0
    if role == "embed":
        return 1.0 if model.tie_word_embeddings else 0.0
    if _routed(model, t):
        return (model.n_experts_active or model.n_experts) / model.n_experts
    return 1.0


def read_fraction(model: ModelSpec, quant: str | None = None) -> float:
    """Share of the weight bytes one decoded token reads: routed experts (and their biases) count
    n_active/n_experts, the input embedding one row (all of it when tied to the output head), vision/audio towers
    nothing. Counted in bytes at each tensor's type where the types are known (a GGUF file's, or llama-quantize's
    under ``quant``: _gguf_typed): an MXFP4_MOE file's experts are MXFP4 (17/32 B an element) and what a token reads
    besides them Q8_0 (34/32), so the share of its elements is not the share of its bytes (gpt-oss-120b: 4.43 % of
    the elements, 5.8 % of the bytes; review22 #10). Elsewhere (vLLM's fp8, AWQ, MLX: no typed view) the elements'
    share, the mix taken as uniform."""
    return _READ.get(model, ("all", quant), lambda: _fraction(model, quant, rest=False))


def rest_read_fraction(model: ModelSpec, quant: str | None = None) -> float:
    """read_fraction over everything but the input embedding: the share of a device's non-embedding weight bytes
    one token reads (a tied output head counts as the embedding-sized matrix it multiplies by)."""
    return _READ.get(model, ("rest", quant), lambda: _fraction(model, quant, rest=True))


_READ = IdMemo(512)


def _fraction(model: ModelSpec, quant: str | None, rest: bool) -> float:
    view = _gguf_typed(model, quant)
    tensors = view.tensors if view is not None else model.tensors
    size = (lambda t: t.nbytes or 0) if view is not None else (lambda t: t.numel)
    total = read = 0.0
    for t in tensors:
        n = size(t)
        if rest and t.role == "embed":
            read += n if model.tie_word_embeddings else 0.0
            continue
        total += n
        read += n * _share(model, t)
    if not total:
        if rest and tensors:
            return read_fraction(model, quant)
        return model.active_params / model.params if model.params else 1.0
    return min(1.0, read / total) if rest else read / total


@dataclass(frozen=True)
class ReadGroup:
    """One kind of weight in what a decoded token reads (--explain's "bytes read per token")."""
    label: str
    types: str              # its ggml types, most bytes first ("MXFP4", "Q4_K 66 %, Q6_K 34 %")
    stored: float           # bytes the file holds
    share: float            # the share a token reads
    read: float             # stored × share (summed per tensor)


_GROUPS = (("routed experts", lambda r: r.startswith("expert_")), ("input embedding", lambda r: r == "embed"),
           ("output head", lambda r: r == "lm_head"), ("attention", lambda r: r.startswith("attn_")),
           ("dense FFN / shared experts", lambda r: r.startswith(("ffn_", "shared_"))))


def read_groups(model: ModelSpec, quant: str | None) -> tuple[ReadGroup, ...] | None:
    """What a decoded token reads, by kind of weight, in the bytes of each tensor's type (read_fraction's terms);
    None where the types are unknown (no typed view: read_fraction counts elements)."""
    return _READ.get(model, ("groups", quant), lambda: _read_groups(model, quant))


def _read_groups(model: ModelSpec, quant: str | None) -> tuple[ReadGroup, ...] | None:
    view = _gguf_typed(model, quant)
    if view is None:
        return None
    acc: dict[str, tuple[float, float, dict[str, float]]] = {}
    for t in view.tensors:
        if t.role in _SKIP_ROLES:
            continue
        label = "routed experts" if _routed(model, t) else next((g for g, test in _GROUPS if test(t.role)),
                                                                "other (norms, biases, router)")
        stored, read, types = acc.get(label, (0.0, 0.0, {}))
        n = float(t.nbytes or 0)
        types[t.dtype or "?"] = types.get(t.dtype or "?", 0.0) + n
        acc[label] = (stored + n, read + n * _share(model, t), types)
    order = [g for g, _ in _GROUPS] + ["other (norms, biases, router)"]
    return tuple(ReadGroup(label, _types_words(types), stored, read / stored if stored else 0.0, read)
                 for label in order if label in acc for stored, read, types in [acc[label]] if stored)


def _types_words(types: dict[str, float]) -> str:
    total = sum(types.values()) or 1.0
    ranked = sorted(types.items(), key=lambda kv: -kv[1])
    if ranked[0][1] / total >= 0.995:      # gpt-oss's experts: MXFP4 beside their F32 biases (0.3 %)
        return ranked[0][0]
    return ", ".join(f"{k} {v / total:.0%}" for k, v in ranked if v / total >= 0.005)


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
