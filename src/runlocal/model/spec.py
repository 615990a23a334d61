"""The one typed description of a model that every reader produces and every planner consumes.

A ModelSpec holds what memory planning needs and nothing else: the tensors (names, shapes,
roles, and their stored dtype/bytes when read from a file) and the per-layer attention or
recurrent layout that decides the KV cache.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import prod
from typing import Literal

# What a tensor is for. Readers (HF config synthesis, safetensors names, GGUF names) all map
# to this vocabulary, so quantizers and planners can reason about any source alike.
Role = Literal[
    "embed", "lm_head", "pos_embed",
    "attn_q", "attn_k", "attn_v", "attn_o", "attn_qkv",
    "attn_q_a", "attn_q_b", "attn_kv_a", "attn_kv_b",        # MLA low-rank projections
    "attn_sinks",
    "ffn_gate", "ffn_up", "ffn_down", "ffn_gate_up",
    "expert_gate", "expert_up", "expert_down", "expert_gate_up",
    "shared_gate", "shared_up", "shared_down",
    "router",
    "ssm_in", "ssm_out", "ssm_conv", "ssm_param",            # recurrent / linear-attention blocks
    "norm", "bias",
    "vision", "projector", "audio",
    "other",
]

AttentionKind = Literal["full", "sliding", "mla"]


@dataclass(frozen=True)
class TensorInfo:
    """One weight tensor. ``dtype``/``nbytes`` are set when read from a real file."""

    name: str
    shape: tuple[int, ...]
    role: str = "other"
    layer: int | None = None
    dtype: str | None = None
    nbytes: int | None = None

    @property
    def numel(self) -> int:
        return prod(self.shape) if self.shape else 1


# A tensor named as in a GGUF file (read from one), not as in a checkpoint.
GGUF_NAME = re.compile(r"^(blk\.\d+\.|token_embd|output|rope_|position_embd|token_types)")


def split_in_gguf(t: TensorInfo) -> int:
    """How many GGUF tensors this one becomes: 2 for a checkpoint's fused expert gate_up, which
    convert_hf_to_gguf.py writes as ffn_gate_exps and ffn_up_exps, and for MLA's kv_b_proj, written as
    attn_k_b and attn_v_b (equal halves: qk_nope_head_dim = v_head_dim) (quant.gguf_mix.gguf_names)."""
    return 2 if t.role in ("expert_gate_up", "attn_kv_b") and not GGUF_NAME.match(t.name) else 1


@dataclass(frozen=True)
class AttentionSpec:
    """What one attention layer stores per token in its KV cache.

    For MLA the cache holds one latent "head": ``k_dim = kv_lora_rank + qk_rope_head_dim``,
    ``v_dim = kv_lora_rank`` (llama.cpp) — the runtime decides whether V is stored apart.
    """

    kind: AttentionKind
    n_kv_heads: int
    k_dim: int          # per-head K width
    v_dim: int          # per-head V width
    window: int | None = None   # sliding-window size in tokens (kind == "sliding")


@dataclass(frozen=True)
class RecurrentSpec:
    """Constant per-sequence state of a recurrent / linear-attention layer, in elements.

    ``conv_elems``: the rolling convolution state; ``state_elems``: the SSM / delta-rule state.
    Both are kept in f32 by llama.cpp and vLLM unless told otherwise.
    """

    conv_elems: int
    state_elems: int
    # How the state splits under tensor parallel (vLLM's MambaStateShapeCalculator); 0 / "" when unknown
    # (a GGUF file), then a runtime divides both parts evenly.
    kind: str = ""                # "mamba", "mamba2", "gated_deltanet"
    conv_channels: int = 0        # channels of the conv state: conv_elems = (kernel − 1) × conv_channels
    n_groups: int = 0             # Mamba-2 B/C groups (vLLM replicates them up to the TP size when they do not divide it)
    d_state: int = 0              # Mamba-2 state size (the width a replicated group adds, twice)
    chunk_size: int = 0           # Mamba-2 SSD chunk (config mamba_chunk_size / chunk_size)
    ssm_dtype: str | None = None  # the SSM-state dtype the checkpoint's config asks for (Qwen3.5's mamba_ssm_dtype)


@dataclass(frozen=True)
class LayerSpec:
    attention: AttentionSpec | None = None
    recurrent: RecurrentSpec | None = None
    moe: bool = False


@dataclass(frozen=True)
class ModelSpec:
    id: str
    architecture: str                 # HF class (LlamaForCausalLM) or GGUF general.architecture
    family: str                       # model_type / gguf arch: llama, qwen3, gemma3, deepseek_v3 …
    hidden_size: int
    n_layers: int
    n_heads: int
    vocab_size: int
    layers: tuple[LayerSpec, ...]
    tensors: tuple[TensorInfo, ...] = ()
    intermediate_size: int | None = None
    max_position_embeddings: int | None = None
    tie_word_embeddings: bool = False
    n_experts: int = 0
    n_experts_active: int = 0
    source: str = ""                  # where the description came from (path, URL, repo id, catalog)
    repo_id: str | None = None        # the Hugging Face repo this model lives in, when known
    file_quant: str | None = None     # the quantization of the file read (GGUF ftype, "bf16", "awq" …)
    quant_exclude: tuple[str, ...] = ()   # ModelOpt exclude_modules: modules the checkpoint keeps unquantized
    kv_cache_quant: str | None = None     # ModelOpt kv_cache_quant_algo ("fp8"), what vLLM's auto KV dtype becomes
    published_params: int | None = None
    notes: tuple[str, ...] = field(default=())

    # --- parameter counts -------------------------------------------------------------------
    @property
    def params(self) -> int:
        return sum(t.numel for t in self.tensors)

    @property
    def vision_params(self) -> int:
        return sum(t.numel for t in self.tensors if t.role in ("vision", "projector", "audio"))

    @property
    def active_params(self) -> int:
        """Parameters touched per token: routed experts count only n_active / n_experts."""
        if not self.n_experts:
            return self.params
        expert = sum(t.numel for t in self.tensors if t.role.startswith("expert_"))
        return self.params - expert + expert * self.n_experts_active // self.n_experts

    @property
    def file_bytes(self) -> int | None:
        """Bytes of the weights as stored in the file read, when every tensor's size is known."""
        if not self.tensors or any(t.nbytes is None for t in self.tensors):
            return None
        return sum(t.nbytes for t in self.tensors)  # type: ignore[misc]

    @property
    def attention_layers(self) -> list[AttentionSpec]:
        return [layer.attention for layer in self.layers if layer.attention is not None]

    @property
    def recurrent_layers(self) -> list[RecurrentSpec]:
        return [layer.recurrent for layer in self.layers if layer.recurrent is not None]
