"""A Hugging Face config.json dict → ModelSpec (tensor list and per-layer attention layout).

This first version covers decoder-only transformers built like Llama (dense or MoE, GQA, explicit
head_dim, q/k norms, qkv biases, tied embeddings, sliding-window layers, MLA latent KV); other
families are read through the same path and say so in ``spec.notes``.
"""

from __future__ import annotations

from typing import Any

from ..errors import ModelFormatError
from .spec import AttentionSpec, LayerSpec, ModelSpec, TensorInfo

REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
QKV_BIAS = {"qwen2", "qwen2_moe"}
QK_NORM = {"qwen3", "qwen3_moe", "gemma3", "gemma3_text", "olmo2"}


# Fields published Gemma 3 configs leave to transformers' Gemma3TextConfig defaults (transformers 5.23).
FAMILY_DEFAULTS = {"gemma3": {"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4,
                              "head_dim": 256, "sliding_window": 4096, "max_position_embeddings": 131072,
                              "sliding_window_pattern": 6}}


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs keep the language model in text_config; family defaults fill the gaps."""
    inner = config.get("text_config")
    merged = dict(config)
    if isinstance(inner, dict):
        merged = {k: v for k, v in config.items() if k != "text_config"}
        merged.update(inner)
    family = str(config.get("model_type", ""))
    for key, value in FAMILY_DEFAULTS.get(family.removesuffix("_text"), {}).items():
        merged.setdefault(key, value)
    return merged


def _layer_kinds(c: dict[str, Any], n: int) -> list[str]:
    window = c.get("sliding_window")
    types = c.get("layer_types")
    if isinstance(types, list) and len(types) == n:
        return ["sliding" if "sliding" in str(t) else "full" for t in types]
    mt = c.get("model_type", "")
    if not window or c.get("use_sliding_window") is False:
        return ["full"] * n
    if mt == "gemma2":
        return ["sliding" if i % 2 == 0 else "full" for i in range(n)]
    pattern = c.get("sliding_window_pattern")
    if mt.startswith("gemma3") or pattern:
        p = int(pattern or 6)
        return ["sliding" if (i + 1) % p else "full" for i in range(n)]
    if mt == "mistral":
        return ["sliding"] * n
    return ["full"] * n


def spec_from_config(config: dict[str, Any], *, id: str, source: str = "", repo_id: str | None = None) -> ModelSpec:
    if not isinstance(config, dict):
        raise ModelFormatError(f"{source or id}: config must be a JSON object")
    c = text_config(config)
    for key in REQUIRED:
        if not isinstance(c.get(key), int) or c[key] <= 0:
            raise ModelFormatError(f"{source or id}: config.json lacks '{key}' (expected a positive integer)")
    mt = str(c.get("model_type") or config.get("model_type") or "unknown")
    h, n, heads, vocab = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["vocab_size"]
    kv = c.get("num_key_value_heads") or heads
    hd = c.get("head_dim") or h // heads
    ff = c.get("intermediate_size") or 4 * h
    n_exp = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts") or 0
    n_act = c.get("num_experts_per_tok") or 0
    moe_ff = c.get("moe_intermediate_size") or ff
    kv_lora = c.get("kv_lora_rank")
    kinds = _layer_kinds(c, n)
    tied_default = mt.startswith("gemma")        # Gemma configs tie by default (PretrainedConfig default True)
    tied = bool(config.get("tie_word_embeddings", c.get("tie_word_embeddings", tied_default)))
    fused = mt == "phi3"                          # Phi-3 stores qkv_proj and gate_up_proj fused
    p = "model."
    t: list[TensorInfo] = [TensorInfo(p + "embed_tokens.weight", (vocab, h), "embed")]
    layers = []
    for i in range(n):
        q = f"{p}layers.{i}."
        if kv_lora:
            rope, nope, vdim = c.get("qk_rope_head_dim", 64), c.get("qk_nope_head_dim", 128), c.get("v_head_dim", 128)
            qd = heads * (rope + nope)
            q_lora = c.get("q_lora_rank")
            if q_lora:
                t += [TensorInfo(q + "self_attn.q_a_proj.weight", (q_lora, h), "attn_q_a", i),
                      TensorInfo(q + "self_attn.q_a_layernorm.weight", (q_lora,), "norm", i),
                      TensorInfo(q + "self_attn.q_b_proj.weight", (qd, q_lora), "attn_q_b", i)]
            else:
                t.append(TensorInfo(q + "self_attn.q_proj.weight", (qd, h), "attn_q", i))
            t += [TensorInfo(q + "self_attn.kv_a_proj_with_mqa.weight", (kv_lora + rope, h), "attn_kv_a", i),
                  TensorInfo(q + "self_attn.kv_a_layernorm.weight", (kv_lora,), "norm", i),
                  TensorInfo(q + "self_attn.kv_b_proj.weight", (heads * (nope + vdim), kv_lora), "attn_kv_b", i),
                  TensorInfo(q + "self_attn.o_proj.weight", (h, heads * vdim), "attn_o", i)]
            att = AttentionSpec("mla", 1, kv_lora + rope, kv_lora)
        else:
            bias = mt in QKV_BIAS or bool(c.get("attention_bias"))
            if fused:
                t += [TensorInfo(q + "self_attn.qkv_proj.weight", ((heads + 2 * kv) * hd, h), "attn_qkv", i)]
            else:
                t += [TensorInfo(q + "self_attn.q_proj.weight", (heads * hd, h), "attn_q", i),
                      TensorInfo(q + "self_attn.k_proj.weight", (kv * hd, h), "attn_k", i),
                      TensorInfo(q + "self_attn.v_proj.weight", (kv * hd, h), "attn_v", i)]
            t += [TensorInfo(q + "self_attn.o_proj.weight", (h, heads * hd), "attn_o", i)]
            if mt == "gpt_oss":   # gpt-oss: an output-projection bias and one attention sink per head
                t += [TensorInfo(q + "self_attn.o_proj.bias", (h,), "bias", i),
                      TensorInfo(q + "self_attn.sinks", (heads,), "attn_sinks", i)]
            if bias:
                t += [TensorInfo(q + f"self_attn.{x}_proj.bias", (d,), "bias", i)
                      for x, d in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd))]
            if mt in QK_NORM:
                t += [TensorInfo(q + "self_attn.q_norm.weight", (hd,), "norm", i),
                      TensorInfo(q + "self_attn.k_norm.weight", (hd,), "norm", i)]
            att = AttentionSpec(kinds[i], kv, hd, hd, c.get("sliding_window") if kinds[i] == "sliding" else None)
        dense_first = c.get("first_k_dense_replace", 0) or 0
        is_moe = bool(n_exp) and i >= dense_first
        if is_moe:
            t += [TensorInfo(q + "mlp.gate.weight", (n_exp, h), "router", i),
                  TensorInfo(q + "mlp.experts.gate_up_proj", (n_exp, 2 * moe_ff, h), "expert_gate_up", i),
                  TensorInfo(q + "mlp.experts.down_proj", (n_exp, h, moe_ff), "expert_down", i)]
            if mt == "gpt_oss":   # gpt-oss routers and experts carry biases
                t += [TensorInfo(q + "mlp.router.bias", (n_exp,), "bias", i),
                      TensorInfo(q + "mlp.experts.gate_up_proj_bias", (n_exp, 2 * moe_ff), "bias", i),
                      TensorInfo(q + "mlp.experts.down_proj_bias", (n_exp, h), "bias", i)]
            shared = c.get("n_shared_experts") or 0
            sh_ff = c.get("shared_expert_intermediate_size") or shared * moe_ff
            if sh_ff:
                t += [TensorInfo(q + "mlp.shared_experts.gate_proj.weight", (sh_ff, h), "shared_gate", i),
                      TensorInfo(q + "mlp.shared_experts.up_proj.weight", (sh_ff, h), "shared_up", i),
                      TensorInfo(q + "mlp.shared_experts.down_proj.weight", (h, sh_ff), "shared_down", i)]
        elif fused:
            t += [TensorInfo(q + "mlp.gate_up_proj.weight", (2 * ff, h), "ffn_gate_up", i),
                  TensorInfo(q + "mlp.down_proj.weight", (h, ff), "ffn_down", i)]
        else:
            t += [TensorInfo(q + "mlp.gate_proj.weight", (ff, h), "ffn_gate", i),
                  TensorInfo(q + "mlp.up_proj.weight", (ff, h), "ffn_up", i),
                  TensorInfo(q + "mlp.down_proj.weight", (h, ff), "ffn_down", i)]
        t += [TensorInfo(q + "input_layernorm.weight", (h,), "norm", i),
              TensorInfo(q + "post_attention_layernorm.weight", (h,), "norm", i)]
        layers.append(LayerSpec(att, None, is_moe))
    t.append(TensorInfo(p + "norm.weight", (h,), "norm"))
    if not tied:
        t.append(TensorInfo("lm_head.weight", (vocab, h), "lm_head"))
    qc = config.get("quantization_config") or {}
    dtype = str(config.get("torch_dtype") or config.get("dtype") or c.get("torch_dtype") or "bfloat16")
    file_quant = (f"{qc.get('quant_method')}" if qc else {"bfloat16": "bf16", "float16": "fp16",
                                                          "float32": "fp32"}.get(dtype, "bf16"))
    notes = () if mt in ("llama", "mistral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "mixtral", "deepseek_v3",
                         "deepseek_v2", "gemma3_text", "gemma2") else (
        f"model_type '{mt}' read through the Llama-like path: counts may miss family-specific tensors",)
    archs = config.get("architectures") or [mt]
    return ModelSpec(id=id, architecture=str(archs[0]), family=mt, hidden_size=h, n_layers=n, n_heads=heads,
                     vocab_size=vocab, layers=tuple(layers), tensors=tuple(t), intermediate_size=ff,
                     max_position_embeddings=c.get("max_position_embeddings"), tie_word_embeddings=tied,
                     n_experts=n_exp, n_experts_active=n_act, source=source, repo_id=repo_id,
                     file_quant=file_quant, notes=notes)
