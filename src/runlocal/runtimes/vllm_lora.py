"""vLLM's LoRA slots: the GPU memory ``--enable-lora`` reserves while the model loads (issue 18, point 5).

vLLM wraps every LoRA-capable linear layer and preallocates, for ``--max-loras`` slots at ``--max-lora-rank``,
the stacked A and B matrices of every output slice (vllm/lora/layers/base_linear.py
BaseLinearLayerWithLoRA.create_lora_weights; column_parallel_linear.py for the merged QKV and gate/up layers):

    A: (max_loras, 1, max_lora_rank, input_size)    B: (max_loras, 1, output_size, max_lora_rank)

in ``lora_dtype`` ("auto": the model's dtype, 2 bytes for bf16/fp16 and for quantized checkpoints, whose
activations are 16-bit). A column-parallel layer (qkv_proj, gate_up_proj) keeps its whole input and 1/TP of its
outputs; a row-parallel one (o_proj, down_proj) 1/TP of its input and its whole output. The slots are made inside
``load_model``, so vLLM counts them in "Model loading took … GiB", before the KV cache is sized: they come out of
the KV pool. Defaults (vllm/config/lora.py LoRAConfig): max_loras 1, max_lora_rank 16; the ranks vLLM accepts are
1, 8, 16, 32, 64, 128, 256, 320, 512.

Not counted: LoRA on MoE experts (FusedMoEWithLoRA), on MLA projections and on the vocabulary / lm_head, and the
adapters' copies in CPU memory (--max-cpu-loras); a plan says so. Pure: no I/O.
"""

from __future__ import annotations

from ..model.spec import ModelSpec

MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)     # vllm/config/lora.py MaxLoRARanks
DEFAULT_MAX_LORAS = 1
DEFAULT_MAX_LORA_RANK = 16


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def lora_slot_bytes(model: ModelSpec, max_loras: int, max_lora_rank: int, tp: int = 1, pp: int = 1,
                    dtype_bytes: int = 2) -> int:
    """Bytes of the preallocated LoRA A/B stacks on one GPU (TP rank, PP stage holding 1/PP of the layers)."""
    tp, r = max(1, tp), max_lora_rank
    h = model.hidden_size
    ff = model.intermediate_size or 0
    elems = 0
    for layer in model.layers:
        a = layer.attention
        if a is not None and a.kind != "mla":
            q = model.n_heads * a.k_dim
            kv_heads = _ceil_div(a.n_kv_heads, tp)          # K/V heads replicated when fewer than TP ranks
            # qkv_proj: three slices (q, k, v), each A r × hidden; B the rank's q / k / v outputs × r
            elems += 3 * r * h + (q // tp + kv_heads * a.k_dim + kv_heads * a.v_dim) * r
            # o_proj (row parallel): A r × q/TP, B hidden × r
            elems += r * (model.n_heads * a.v_dim) // tp + h * r
        if ff and not layer.moe:
            # gate_up_proj: two slices, A r × hidden each, B (ff/TP) × r each; down_proj: A r × ff/TP, B hidden × r
            elems += 2 * r * h + 2 * (ff // tp) * r + r * ff // tp + h * r
    return elems * max(1, max_loras) * dtype_bytes // max(1, pp)


def not_covered(model: ModelSpec) -> list[str]:
    """The LoRA-capable parts of this model the slots above leave out."""
    out = []
    if any(layer.moe for layer in model.layers):
        out.append("MoE experts")
    if any(a.kind == "mla" for a in model.attention_layers):
        out.append("MLA projections")
    return out
