"""Which tensor-parallel sizes vLLM and SGLang accept for a model: the attention heads split evenly over the ranks.

- vLLM checks the query heads before it loads anything (vllm/config/model.py ModelConfig.verify_with_parallel_config:
  ``if total_num_attention_heads % tensor_parallel_size != 0: raise ValueError("Total number of attention heads
  ({total_num_attention_heads}) must be divisible by tensor parallel size ({tensor_parallel_size}).")``).
- Both engines' attention layers then split the KV heads (vllm/model_executor/models/llama.py and
  sglang/srt/models/llama.py LlamaAttention.__init__, the same lines in each model file: ``assert
  self.total_num_heads % tp_size == 0``; KV heads ≥ TP: ``assert self.total_num_kv_heads % tp_size == 0``, else
  ``assert tp_size % self.total_num_kv_heads == 0``, the KV heads replicated). MLA caches one latent per token that
  every rank holds whole, so only its query heads are split.

Pure computation.
"""

from __future__ import annotations

from ..model.spec import ModelSpec


def _kv_heads(model: ModelSpec) -> list[int]:
    """The distinct KV-head counts the attention layers split (none for MLA's shared latent)."""
    return sorted({a.n_kv_heads for a in model.attention_layers if a.kind != "mla" and a.n_kv_heads})


def head_split_refusal(model: ModelSpec, tp: int) -> str | None:
    """Why the engine refuses ``tp`` ranks for this model, in its own words, and the nearest sizes it takes; None when
    the heads split evenly."""
    why = unsplit_heads(model, tp)
    if why is None:
        return None
    near = sorted(sorted((n for n in (tp - 1, tp + 1, tp - 2, tp + 2) if n >= 1 and unsplit_heads(model, n) is None),
                         key=lambda n: abs(n - tp))[:2])
    sizes = " or ".join(map(str, near))
    return (f"{why[0]} ({why[1]}: the engine refuses to start)"
            + (f"; --tensor-parallel-size {sizes} splits them, or --pipeline-parallel-size {tp} spreads the layers"
               if near else ""))


def unsplit_heads(model: ModelSpec, tp: int) -> tuple[str, str] | None:
    """(the engine's message, where it is raised) when ``tp`` does not split the heads; None when it does."""
    if tp <= 1 or model.n_heads <= 0:
        return None
    if model.n_heads % tp:
        return (f"Total number of attention heads ({model.n_heads}) must be divisible by tensor parallel size ({tp}).",
                "vLLM: vllm/config/model.py verify_with_parallel_config; SGLang asserts it in the attention layer")
    for kv in _kv_heads(model):
        if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
            rule = "total_num_kv_heads % tp_size == 0" if kv >= tp else "tp_size % total_num_kv_heads == 0"
            return (f"{kv} KV heads do not split over tensor parallel size {tp}: assert {rule}",
                    "models/llama.py LlamaAttention in vLLM and SGLang")
    return None


def largest_tp(model: ModelSpec, ranks: int) -> int:
    """The largest tensor-parallel size up to ``ranks`` whose heads the engine splits (1 always does)."""
    return next(n for n in range(max(1, ranks), 0, -1) if unsplit_heads(model, n) is None)
