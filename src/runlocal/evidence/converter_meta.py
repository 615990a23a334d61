"""A catalog model as a shrunken GGUF that real llama.cpp loads: its config with few layers, and the metadata
convert_hf_to_gguf.py writes for that config.

``shrunk_config`` keeps what decides llama.cpp's memory layout: the architecture, the width (hidden_size), the
attention heads, KV heads and head size, the sliding window and the per-layer pattern (layer_types, the
interleave and period keys), the MLA ranks and the recurrent (SSM / gated delta-net) dimensions. It cuts the
layer count to one period of the pattern and narrows what does not touch the KV cache or the recurrent state:
the feed-forward widths, the number of experts and the vocabulary. The data of the GGUF is a hole in a sparse
file (evidence.zero_gguf.write_zero_gguf), so a real width costs no disk.

``converter_kv`` is what convert_hf_to_gguf.py (ggml-org/llama.cpp, conversion/*.py, checked 2026-11) writes in
``set_gguf_parameters`` for that architecture, as far as llama.cpp's ``load_arch_hparams`` reads it: the
``TextModel`` base keys (conversion/base.py: block_count, context_length, embedding_length, feed_forward_length,
head_count, head_count_kv, rope_freq_base, layer_norm_rms_eps, expert_count, expert_used_count, key_length /
value_length from head_dim) and each architecture's own (cited at each entry). The tokenizer is left out on
purpose: ``tokenizer.ggml.model = "none"`` with ``<arch>.vocab_size`` makes llama.cpp create dummy tokens.
Values that cannot change memory (rope scaling factors, logit multipliers) are left out unless llama.cpp
requires the key. Standard library only.
"""

from __future__ import annotations

import copy
from typing import Any

SMALL_FF = 256          # feed-forward widths (dense, expert, shared expert)
SMALL_VOCAB = 512
SMALL_EXPERTS = 4

# one period of each architecture's layer pattern (src/models/<arch>.cpp set_swa_pattern / the converter's keys)
PATTERN_LAYERS = {"gemma3": 6, "cohere2": 4, "llama4": 4, "gpt-oss": 2, "gemma2": 2, "jamba": 8,
                  "qwen3next": 4, "qwen35": 4, "qwen35moe": 4, "smollm3": 4, "granitehybrid": 6}


def _text(config: dict[str, Any]) -> dict[str, Any]:
    return config.get("text_config", config)


def shrunk_config(config: dict[str, Any], arch: str) -> dict[str, Any]:
    """The config with one period of its layer pattern and narrow feed-forward / expert / vocabulary sizes."""
    config = copy.deepcopy(config)
    if arch == "dbrx":
        return _dbrx_shrunk(config)
    t = _text(config)
    n_old = t["num_hidden_layers"]
    n = PATTERN_LAYERS.get(arch, 2)
    if arch == "deepseek2":
        n = t.get("first_k_dense_replace", 0) + 1        # the dense leading layers, then one MoE layer
        if not t.get("q_lora_rank"):
            # src/models/deepseek2.cpp: is_lite = (n_layer == 27 || n_layer == 26), no q_lora_rank key read
            n = n_old
    if arch == "llama4":
        n = max(n, 2 * t.get("interleave_moe_layer_step", 1))
    if arch == "glm4moe":
        n = t.get("first_k_dense_replace", 1) + 1            # the dense leading layers, then one MoE layer
    if arch == "olmo2" and t.get("sliding_window"):
        n = 4                                                 # OLMo 3: three sliding layers, then one full
    if arch in ("nemotron_h", "nemotron_h_moe") and isinstance(t.get("hybrid_override_pattern"), str):
        n = t["hybrid_override_pattern"].index("*") + 2       # Mamba-2 and MLP/MoE layers, the first attention, one more
        t["hybrid_override_pattern"] = t["hybrid_override_pattern"][:n]
    if arch == "gemma4":
        n = _gemma4_layers(t)
    n = min(n, n_old)
    t["num_hidden_layers"] = n
    for key, value in list(t.items()):
        if isinstance(value, list) and len(value) == n_old:   # layer_types, no_rope_layers …: per-layer lists
            t[key] = value[:n]
    for key in ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size",
                "shared_intermediate_size", "intermediate_size_mlp", "moe_shared_expert_intermediate_size"):
        # Mamba's intermediate_size is its d_inner; Phi-2's converter writes 4 × hidden whatever the config says
        if isinstance(t.get(key), int) and arch not in ("mamba", "phi2"):
            t[key] = SMALL_FF
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        if isinstance(t.get(key), int) and t[key] > SMALL_EXPERTS:
            t[key] = SMALL_EXPERTS
    if isinstance(t.get("num_experts_per_tok"), int):
        t["num_experts_per_tok"] = min(t["num_experts_per_tok"], SMALL_EXPERTS)
    for key in ("n_group", "topk_group"):                    # DeepSeek-V3 group-limited routing over 4 experts
        if isinstance(t.get(key), int):
            t[key] = 1
    t["vocab_size"] = SMALL_VOCAB
    if arch == "gemma4" and t.get("vocab_size_per_layer_input"):
        t["vocab_size_per_layer_input"] = SMALL_VOCAB      # llama.cpp: per_layer_token_embd is {n_layer·d, n_vocab}
    return config


def _dbrx_shrunk(config: dict[str, Any]) -> dict[str, Any]:
    """DBRX keeps its sizes in its own keys (n_layers, d_model, attn_config, ffn_config): two layers, narrow experts."""
    ffn = config["ffn_config"]
    config["n_layers"] = min(2, config["n_layers"])
    ffn["ffn_hidden_size"] = SMALL_FF
    ffn["moe_num_experts"] = min(ffn["moe_num_experts"], SMALL_EXPERTS)
    ffn["moe_top_k"] = min(ffn["moe_top_k"], ffn["moe_num_experts"])
    config["vocab_size"] = SMALL_VOCAB
    return config


def _dbrx_kv(config: dict[str, Any]) -> dict[str, Any]:
    """conversion/dbrx.py DbrxModel.set_gguf_parameters: every size from DBRX's own keys, clip_qkv as clamp_kqv,
    LayerNorm epsilon 1e-5."""
    attn, ffn = config["attn_config"], config["ffn_config"]
    return {"{arch}.block_count": config["n_layers"], "{arch}.context_length": config["max_seq_len"],
            "{arch}.embedding_length": config["d_model"], "{arch}.feed_forward_length": ffn["ffn_hidden_size"],
            "{arch}.attention.head_count": config["n_heads"], "{arch}.attention.head_count_kv": attn["kv_n_heads"],
            "{arch}.rope.freq_base": float(attn.get("rope_theta") or 10000.0),
            "{arch}.attention.clamp_kqv": float(attn.get("clip_qkv") or 0.0),
            "{arch}.expert_count": ffn["moe_num_experts"], "{arch}.expert_used_count": ffn["moe_top_k"],
            "{arch}.attention.layer_norm_epsilon": 1e-5, "{arch}.vocab_size": config["vocab_size"],
            "tokenizer.ggml.model": "none"}


def _gemma4_layers(t: dict[str, Any]) -> int:
    """Gemma 4: one period of layer_types (sliding layers up to the first full one); with KV sharing, two periods
    and the second shared, so each shared layer kind has an earlier layer of its kind to read from."""
    types = t.get("layer_types") or []
    period = types.index("full_attention") + 1 if "full_attention" in types else 6
    if not t.get("num_kv_shared_layers"):
        return period
    t["num_kv_shared_layers"] = period
    return 2 * period


def _head_dim(t: dict[str, Any]) -> int:
    return int(t.get("head_dim") or t["hidden_size"] // t["num_attention_heads"])


def _base_kv(t: dict[str, Any], n_ctx: int) -> dict[str, Any]:
    """conversion/base.py TextModel.set_gguf_parameters."""
    kv: dict[str, Any] = {
        "{arch}.block_count": t["num_hidden_layers"],
        "{arch}.context_length": int(t.get("max_position_embeddings") or n_ctx),
        "{arch}.embedding_length": t["hidden_size"],
        "{arch}.attention.head_count": t.get("num_attention_heads", 0),
        "{arch}.attention.layer_norm_rms_epsilon": float(t.get("rms_norm_eps") or 1e-5),
        "{arch}.vocab_size": t["vocab_size"],
        "tokenizer.ggml.model": "none",
    }
    if isinstance(t.get("intermediate_size"), int):
        kv["{arch}.feed_forward_length"] = t["intermediate_size"]
    if t.get("num_key_value_heads") is not None:
        kv["{arch}.attention.head_count_kv"] = t["num_key_value_heads"]
    if t.get("rope_theta") is not None:
        kv["{arch}.rope.freq_base"] = float(t["rope_theta"])
    n_experts = t.get("num_local_experts") or t.get("num_experts") or t.get("n_routed_experts")
    if n_experts:
        kv["{arch}.expert_count"] = n_experts
        kv["{arch}.expert_used_count"] = t["num_experts_per_tok"]
    if t.get("head_dim") is not None:
        kv["{arch}.attention.key_length"] = kv["{arch}.attention.value_length"] = t["head_dim"]
    # the router's scoring function when the config names one (ExpertGatingFuncType: 1 softmax, 2 sigmoid);
    # MiniMax M2 and GLM-4.5 read it as optional and abort building the MoE graph without it
    if t.get("scoring_func") in ("softmax", "sigmoid"):
        kv["{arch}.expert_gating_func"] = 2 if t["scoring_func"] == "sigmoid" else 1
    return kv


def _rope_dim(t: dict[str, Any]) -> int:
    return int(_head_dim(t) * float(t.get("partial_rotary_factor") or 1.0))


def _ssm_mamba2(t: dict[str, Any], d_inner: int) -> dict[str, Any]:
    """Mamba-2 mixers (conversion/granite.py GraniteHybridModel, conversion/falcon_h1.py, conversion/mamba.py
    Mamba2Model): conv kernel, state size, groups, inner size, heads as the time-step rank."""
    return {"{arch}.ssm.conv_kernel": t["mamba_d_conv"], "{arch}.ssm.state_size": t["mamba_d_state"],
            "{arch}.ssm.group_count": t["mamba_n_groups"], "{arch}.ssm.inner_size": d_inner,
            "{arch}.ssm.time_step_rank": t["mamba_n_heads"]}


def _arch_kv(arch: str, t: dict[str, Any], n: int) -> dict[str, Any]:
    """The keys each architecture's converter class adds to the TextModel base."""
    kv: dict[str, Any] = {}
    if t.get("moe_intermediate_size"):
        kv["{arch}.expert_feed_forward_length"] = t["moe_intermediate_size"]
    if arch in ("llama", "granite", "smollm3", "olmo2", "llama4", "qwen2vl", "phi3", "command-r", "cohere2",
                "glm4", "qwen3next", "qwen35", "qwen35moe", "falcon-h1", "gpt-oss", "deepseek2"):
        kv["{arch}.rope.dimension_count"] = _rope_dim(t)
    if arch in ("gemma2", "gemma3", "phi3", "cohere2", "gpt-oss") and t.get("sliding_window"):
        kv["{arch}.attention.sliding_window"] = int(t["sliding_window"])     # Gemma2/3Model, Phi3MiniModel …
    if arch == "olmo2" and "sliding_window" in t:    # conversion/olmo.py Olmo2Model (OLMo 3): window + pattern
        kv["{arch}.attention.sliding_window"] = int(t["sliding_window"])
        kv["{arch}.attention.sliding_window_pattern"] = (
            [x == "sliding_attention" for x in t["layer_types"]] if "layer_types" in t
            else [(i + 1) % 4 != 0 for i in range(t["num_hidden_layers"])])
    if arch == "gemma2":        # conversion/gemma.py Gemma2Model
        kv |= {"{arch}.attn_logit_softcapping": float(t.get("attn_logit_softcapping") or 50.0),
               "{arch}.final_logit_softcapping": float(t.get("final_logit_softcapping") or 30.0)}
    if arch in ("command-r", "cohere2"):       # conversion/command_r.py: logit_scale, LayerNorm epsilon
        kv |= {"{arch}.logit_scale": float(t.get("logit_scale") or 1.0),
               "{arch}.attention.layer_norm_epsilon": float(t.get("layer_norm_eps") or 1e-5)}
    if arch == "phi3":         # conversion/phi.py Phi3MiniModel: the original training context
        kv["{arch}.rope.scaling.original_context_length"] = int(
            t.get("original_max_position_embeddings") or t["max_position_embeddings"])
    if arch == "qwen2vl":      # conversion/qwenvl.py: M-RoPE sections, padded to 4
        sections = list(((t.get("rope_scaling") or {}).get("mrope_section")) or [16, 24, 24])
        kv["{arch}.rope.dimension_sections"] = sections + [0] * (4 - len(sections))
    if arch == "llama4":       # conversion/llama4.py: MoE every interleave_moe_layer_step layers
        kv |= {"{arch}.interleave_moe_layer_step": t.get("interleave_moe_layer_step", 1),
               "{arch}.expert_feed_forward_length": t["intermediate_size"],
               "{arch}.feed_forward_length": t.get("intermediate_size_mlp", t["intermediate_size"])}
    if arch == "phi2":         # conversion/phi.py Phi2Model: LayerNorm epsilon, partial rotary, FFN 4 × hidden
        kv |= {"{arch}.attention.layer_norm_epsilon": float(t.get("layer_norm_eps") or 1e-5),
               "{arch}.rope.dimension_count": int(float(t.get("partial_rotary_factor") or 0.5) * t["hidden_size"])
               // t["num_attention_heads"],
               "{arch}.feed_forward_length": 4 * t["hidden_size"],
               "{arch}.attention.head_count_kv": t["num_attention_heads"]}
    if arch in ("granite", "granitemoe", "granitehybrid"):   # conversion/granite.py GraniteModel: muP multipliers
        kv |= {"{arch}.logit_scale": float(t.get("logits_scaling") or 1.0),
               "{arch}.residual_scale": float(t.get("residual_multiplier") or 1.0),
               "{arch}.embedding_scale": float(t.get("embedding_multiplier") or 1.0),
               "{arch}.attention.scale": float(t.get("attention_multiplier") or 1.0)}
    if arch == "gpt-oss":      # conversion/gpt_oss.py: experts as wide as intermediate_size
        kv["{arch}.expert_feed_forward_length"] = t["intermediate_size"]
    if arch == "glm4moe":      # conversion/glm.py Glm4MoeModel (the MTP block past num_hidden_layers left out here)
        kv |= {"{arch}.rope.dimension_count": int(_head_dim(t) * float(
                   (t.get("rope_parameters") or {}).get("partial_rotary_factor") or t.get("partial_rotary_factor") or 0.5)),
               "{arch}.expert_shared_count": t.get("n_shared_experts", 1),
               "{arch}.leading_dense_block_count": t.get("first_k_dense_replace", 1),
               "{arch}.expert_gating_func": 2, "{arch}.expert_weights_scale": float(t.get("routed_scaling_factor", 1.0)),
               "{arch}.expert_weights_norm": bool(t.get("norm_topk_prob", True))}
    if arch == "minimax-m2":   # conversion/minimax.py MiniMaxM2Model: experts intermediate_size wide, rotary_dim
        kv |= {"{arch}.expert_feed_forward_length": t["intermediate_size"],
               "{arch}.rope.dimension_count": t.get("rotary_dim") or _rope_dim(t)}
    if arch == "gemma4":
        kv |= _gemma4_kv(t)
    if arch in ("gptneox", "stablelm", "olmo", "falcon"):
        kv |= _early_kv(arch, t)
    if arch == "deepseek2":
        kv |= _deepseek2_kv(t)
    if arch in ("qwen3next", "qwen35", "qwen35moe"):
        kv |= _gated_deltanet_kv(t, arch)
    if arch == "granitehybrid":
        kv |= _ssm_mamba2(t, t["mamba_expand"] * t["hidden_size"])
        types = t["layer_types"]
        kv["{arch}.attention.head_count_kv"] = [t["num_key_value_heads"] if x == "attention" else 0 for x in types]
        kv["{arch}.context_length"] = 2 ** 20 if t.get("position_embedding_type") == "nope" else kv.get(
            "{arch}.context_length", t["max_position_embeddings"])
        if t.get("shared_intermediate_size"):
            kv["{arch}.expert_shared_feed_forward_length"] = t["shared_intermediate_size"]
    if arch in ("nemotron_h", "nemotron_h_moe"):
        kv |= _nemotron_h_kv(t, arch == "nemotron_h_moe")
    if arch == "falcon-h1":
        kv |= _ssm_mamba2(t, int(t.get("mamba_d_ssm") or t["mamba_expand"] * t["hidden_size"]))
    if arch == "jamba":
        kv |= _jamba_kv(t, n)
    if arch == "mamba":
        kv |= _mamba_kv(t)
    return kv


def _gemma4_kv(t: dict[str, Any]) -> dict[str, Any]:
    """convert_hf_to_gguf.py Gemma4Model.set_gguf_parameters (on Gemma3Model's: the sliding window): the KV-shared
    layer count, the per-layer-embedding width, which layers slide, the full layers' head size (key/value_length,
    global_head_dim) and the sliding layers' (key/value_length_swa, head_dim), the feed-forward width per layer when
    use_double_wide_mlp doubles it in the shared layers, head_count_kv per layer when num_global_key_value_heads is
    set, the rotary sizes (the full head size: proportional rope via rope_freqs; head_dim × partial_rotary_factor on
    sliding layers), the experts' width."""
    n, shared = t["num_hidden_layers"], int(t.get("num_kv_shared_layers") or 0)
    swa = [x == "sliding_attention" for x in t["layer_types"]]
    g_hd, hd = int(t.get("global_head_dim") or 512), _head_dim(t)
    kv: dict[str, Any] = {
        "{arch}.attention.sliding_window": int(t.get("sliding_window") or 512),
        "{arch}.attention.shared_kv_layers": shared,
        "{arch}.embedding_length_per_layer_input": int(t.get("hidden_size_per_layer_input") or 0),
        "{arch}.attention.sliding_window_pattern": swa,
        "{arch}.attention.key_length": g_hd, "{arch}.attention.value_length": g_hd,
        "{arch}.attention.key_length_swa": hd, "{arch}.attention.value_length_swa": hd,
        "{arch}.rope.dimension_count": g_hd,
        "{arch}.rope.dimension_count_swa": int(hd * float(t.get("partial_rotary_factor") or 1.0)),
    }
    if t.get("use_double_wide_mlp"):
        ff = t["intermediate_size"]
        kv["{arch}.feed_forward_length"] = [ff if i < n - shared else 2 * ff for i in range(n)]
    if t.get("num_global_key_value_heads") is not None and t.get("num_key_value_heads") is not None:
        kv["{arch}.attention.head_count_kv"] = [t["num_key_value_heads"] if s else t["num_global_key_value_heads"]
                                                for s in swa]
    if t.get("moe_intermediate_size"):
        kv["{arch}.expert_feed_forward_length"] = t["moe_intermediate_size"]
    if t.get("top_k_experts"):
        kv["{arch}.expert_used_count"] = t["top_k_experts"]
    return kv


def _early_kv(arch: str, t: dict[str, Any]) -> dict[str, Any]:
    """LayerNorm families: conversion/gpt_neox.py GPTNeoXModel (rope dims from rotary_pct, parallel residual),
    conversion/stablelm.py StableLMModel (rope dims from partial_rotary_factor), conversion/olmo.py OlmoModel
    (LayerNorm epsilon 1e-5, clip_qkv as clamp_kqv), conversion/falcon.py FalconModel (context 2048 "not in
    config.json", FFN 4 × hidden, head_count_kv from num_kv_heads / n_head_kv, else 1)."""
    h, heads = t["hidden_size"], t["num_attention_heads"]
    eps = float(t.get("layer_norm_eps") or t.get("layer_norm_epsilon") or 1e-5)
    kv: dict[str, Any] = {"{arch}.attention.layer_norm_epsilon": eps}
    if arch == "gptneox":
        kv |= {"{arch}.rope.dimension_count": int(float(t.get("rotary_pct", 0.25)) * (h // heads)),
               "{arch}.use_parallel_residual": bool(t.get("use_parallel_residual", True))}
    if arch == "stablelm":
        factor = float(t.get("partial_rotary_factor") or t.get("rope_pct") or 0.25)
        kv |= {"{arch}.rope.dimension_count": int(factor * (h // heads)),
               "{arch}.use_parallel_residual": bool(t.get("use_parallel_residual", True))}
    if arch == "olmo":
        kv["{arch}.attention.layer_norm_epsilon"] = 1e-5
        if t.get("clip_qkv") is not None:
            kv["{arch}.attention.clamp_kqv"] = float(t["clip_qkv"])
    if arch == "falcon":
        kv |= {"{arch}.context_length": 2048, "{arch}.feed_forward_length": 4 * h,
               "{arch}.attention.head_count_kv": int(t.get("num_kv_heads") or t.get("n_head_kv") or 1)
               if t.get("new_decoder_architecture") else 1}
    return kv


_NEMOTRON_KIND = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe", "linear_attention": "mamba",
                  "full_attention": "attention"}


def _nemotron_h_kv(t: dict[str, Any], moe: bool) -> dict[str, Any]:
    """conversion/nemotron.py NemotronHModel (on GraniteHybridModel / Mamba2Model): the Mamba-2 sizes (inner size
    mamba_num_heads × mamba_head_dim, the heads as time-step rank), head_count_kv per layer (0 off the attention
    layers), feed_forward_length per layer (0 off the MLP / MoE layers), the attention head size, the MoE keys."""
    kinds = [_NEMOTRON_KIND.get(x, x) for x in (t.get("hybrid_override_pattern") or t["layers_block_type"])]
    ffn = "moe" if moe else "mlp"
    kv: dict[str, Any] = {
        "{arch}.ssm.conv_kernel": t.get("conv_kernel", 4), "{arch}.ssm.state_size": t["ssm_state_size"],
        "{arch}.ssm.group_count": t["n_groups"], "{arch}.ssm.time_step_rank": t["mamba_num_heads"],
        "{arch}.ssm.inner_size": t["mamba_num_heads"] * t["mamba_head_dim"],
        "{arch}.attention.head_count_kv": [t["num_key_value_heads"] if k == "attention" else 0 for k in kinds],
        "{arch}.feed_forward_length": [(t["moe_intermediate_size"] if moe else t["intermediate_size"])
                                       if k == ffn else 0 for k in kinds],
        "{arch}.attention.key_length": t.get("head_dim") or t["attention_head_dim"],
        "{arch}.attention.value_length": t.get("head_dim") or t["attention_head_dim"],
        "{arch}.rope.dimension_count": t.get("head_dim") or t["attention_head_dim"],
        # conversion/base.py writes layer_norm_epsilon from the config's key of that name; llama.cpp requires it here
        "{arch}.attention.layer_norm_epsilon": float(t.get("layer_norm_epsilon") or 1e-5),
        "{arch}.attention.layer_norm_rms_epsilon": float(t.get("layer_norm_epsilon") or 1e-5),
    }
    if moe:
        kv |= {"{arch}.expert_count": t["n_routed_experts"], "{arch}.expert_used_count": t["num_experts_per_tok"],
               "{arch}.expert_feed_forward_length": t["moe_intermediate_size"],
               "{arch}.expert_shared_feed_forward_length": t["moe_shared_expert_intermediate_size"],
               "{arch}.expert_shared_count": t.get("n_shared_experts", 1),
               "{arch}.expert_weights_norm": bool(t.get("norm_topk_prob", True)),
               "{arch}.expert_weights_scale": float(t.get("routed_scaling_factor", 1.0)),
               "{arch}.expert_group_count": t.get("n_group", 1)}
    return kv


def _deepseek2_kv(t: dict[str, Any]) -> dict[str, Any]:
    """conversion/deepseek.py DeepseekV2Model: MLA written as MQA over the latent (head_count_kv 1, key_length
    kv_lora_rank + qk_rope_head_dim, value_length kv_lora_rank), the MLA head sizes apart, MoE layout."""
    kvr, rope, nope = t["kv_lora_rank"], t["qk_rope_head_dim"], t["qk_nope_head_dim"]
    kv: dict[str, Any] = {
        "{arch}.attention.head_count_kv": 1, "{arch}.attention.kv_lora_rank": kvr,
        "{arch}.attention.key_length": kvr + rope, "{arch}.attention.value_length": kvr,
        "{arch}.attention.key_length_mla": nope + rope, "{arch}.attention.value_length_mla": t["v_head_dim"],
        "{arch}.rope.dimension_count": rope, "{arch}.leading_dense_block_count": t.get("first_k_dense_replace", 0),
        "{arch}.expert_shared_count": t.get("n_shared_experts", 0),
        "{arch}.expert_weights_scale": float(t.get("routed_scaling_factor") or 1.0),
        "{arch}.expert_weights_norm": bool(t.get("norm_topk_prob", False)),
        # ExpertGatingFuncType: 1 softmax (V2), 2 sigmoid (V3, Kimi K2)
        "{arch}.expert_gating_func": 2 if t.get("scoring_func") == "sigmoid" else 1,
        "{arch}.expert_group_count": t.get("n_group") or 1, "{arch}.expert_group_used_count": t.get("topk_group") or 1,
    }
    if t.get("q_lora_rank"):
        kv["{arch}.attention.q_lora_rank"] = t["q_lora_rank"]
    return kv


def _gated_deltanet_kv(t: dict[str, Any], arch: str) -> dict[str, Any]:
    """conversion/qwen.py Qwen3NextModel (Qwen3.5 subclasses it, adding the M-RoPE sections of
    _Qwen35MRopeMixin): the gated delta-net sizes in the ssm.* keys, the full-attention interval."""
    kv: dict[str, Any] = {
        "{arch}.ssm.conv_kernel": t["linear_conv_kernel_dim"], "{arch}.ssm.state_size": t["linear_key_head_dim"],
        "{arch}.ssm.group_count": t["linear_num_key_heads"], "{arch}.ssm.time_step_rank": t["linear_num_value_heads"],
        "{arch}.ssm.inner_size": t["linear_value_head_dim"] * t["linear_num_value_heads"],
        "{arch}.full_attention_interval": t.get("full_attention_interval", 4),
        "{arch}.rope.dimension_count": int(_head_dim(t) * float(t.get("partial_rotary_factor", 0.25))),
    }
    if t.get("shared_expert_intermediate_size"):
        kv["{arch}.expert_shared_feed_forward_length"] = t["shared_expert_intermediate_size"]
    if arch in ("qwen35", "qwen35moe"):
        rope = t.get("rope_parameters") or t.get("rope_scaling") or {}
        kv["{arch}.rope.dimension_sections"] = list(rope.get("mrope_section") or [11, 11, 10]) + [0]
    return kv


def _jamba_kv(t: dict[str, Any], n: int) -> dict[str, Any]:
    """conversion/jamba.py JambaModel: per-layer head_count_kv (0 on Mamba layers), Mamba-1 sizes."""
    h = t["hidden_size"]
    off, period = t["attn_layer_offset"], t["attn_layer_period"]
    return {"{arch}.attention.head_count_kv": [t["num_key_value_heads"] if i >= off and (i - off) % period == 0
                                               else 0 for i in range(n)],
            "{arch}.ssm.conv_kernel": t.get("mamba_d_conv") or 4, "{arch}.ssm.inner_size": t["mamba_expand"] * h,
            "{arch}.ssm.state_size": t.get("mamba_d_state") or 16,
            "{arch}.ssm.time_step_rank": t.get("mamba_dt_rank") or -(h // -16)}


def _mamba_kv(t: dict[str, Any]) -> dict[str, Any]:
    """conversion/mamba.py MambaModel: no attention (head_count 0, feed_forward_length 0), context 2**20."""
    h = t["hidden_size"]
    return {"{arch}.context_length": 2 ** 20, "{arch}.feed_forward_length": 0, "{arch}.attention.head_count": 0,
            "{arch}.ssm.conv_kernel": t.get("conv_kernel") or 4,
            "{arch}.ssm.inner_size": t.get("intermediate_size") or 2 * h,
            "{arch}.ssm.state_size": t.get("state_size") or 16,
            "{arch}.ssm.time_step_rank": t.get("time_step_rank") or -(h // -16),
            "{arch}.ssm.dt_b_c_rms": False}


def with_class_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """The text config as the converter reads it: conversion/base.py load_hparams goes through transformers'
    AutoConfig, so every field the config class defaults (Gemma 3's head_dim 256, Qwen3.5's layer_types …) is
    there; a key the file gives wins. A model type this transformers does not know keeps the file's fields."""
    t = _text(config)
    try:
        from transformers import AutoConfig

        full = AutoConfig.for_model(**config).to_dict()
    except Exception:           # noqa: BLE001 - an unknown or invalid model type: the file's fields alone
        return t
    return {**_text(full), **t}


def converter_kv(config: dict[str, Any], arch: str, n_ctx: int) -> dict[str, Any]:
    """The GGUF metadata for ``config`` (already shrunk) as the converter writes it for ``arch``."""
    if arch == "dbrx":
        return _dbrx_kv(config)
    t = with_class_defaults(config)
    kv = _base_kv(t, n_ctx)
    kv.update(_arch_kv(arch, t, t["num_hidden_layers"]))
    if arch == "nemotron_h":    # dense: NemotronHConfig's default n_routed_experts is no expert count in the file
        for key in ("{arch}.expert_count", "{arch}.expert_used_count"):
            kv.pop(key, None)
    if arch in ("qwen3vl", "qwen3vlmoe"):
        # conversion/qwen3vl.py Qwen3VLTextModel / Qwen3VLMoeTextModel: one DeepStack layer per vision index;
        # the M-RoPE sections llama.cpp requires (src/llama-model.cpp reads rope.dimension_sections), padded to 4
        vision = config.get("vision_config") or {}
        rope = t.get("rope_scaling") or t.get("rope_parameters") or {}
        kv["{arch}.n_deepstack_layers"] = len(vision.get("deepstack_visual_indexes", [8, 16, 24]))
        sections = list(rope.get("mrope_section") or [24, 20, 20])
        kv["{arch}.rope.dimension_sections"] = sections + [0] * (4 - len(sections))
    return kv


def converter_shape(name: str, shape: tuple[int, ...], arch: str, groups: int = 1,
                    n_experts: int = 0) -> tuple[int, ...]:
    """A tensor's shape (PyTorch order) as the converter writes it, where modify_tensors reshapes without changing
    the bytes: conv1d kernels squeezed, (C, 1, K) → (C, K) (conversion/mamba.py, jamba.py, qwen.py, granite.py);
    Mamba-2's A and D given a trailing 1, (H,) → (H, 1) (conversion/mamba.py Mamba2Model); Nemotron-H's gated norm
    split per group, (d_inner,) → (groups, d_inner / groups); DBRX's stacked experts (experts × ffn, d_model) viewed
    as (experts, ffn, d_model), w2 permuted to (experts, d_model, ffn) (conversion/dbrx.py DbrxModel.modify_tensors)."""
    if arch == "dbrx" and n_experts and "_exps." in name and len(shape) == 2:
        ff = shape[0] // n_experts
        return (n_experts, shape[1], ff) if "ffn_down_exps" in name else (n_experts, ff, shape[1])
    if ".ssm_conv1d.weight" in name and len(shape) == 3 and shape[1] == 1:
        return (shape[0], shape[2])
    if arch in ("granitehybrid", "falcon-h1", "mamba2", "nemotron_h", "nemotron_h_moe") and name.endswith(
            (".ssm_a", ".ssm_d")) and len(shape) == 1:
        return (shape[0], 1)
    if arch in ("nemotron_h", "nemotron_h_moe") and name.endswith(".ssm_norm.weight") and len(shape) == 1:
        return (groups, shape[0] // groups)     # NemotronHModel.modify_tensors: the gated norm as (n_group, -1)
    return shape


def converter_extra_tensors(config: dict[str, Any], arch: str) -> list[tuple[str, tuple[int, ...]]]:
    """F32 tensors the converter writes that are no parameter of the transformers model (PyTorch order): Gemma 4's
    rope_freqs, global_head_dim / 2 factors for the full layers' proportional rope (Gemma4Model.
    generate_extra_tensors; llama.cpp requires it), and each layer's layer_scalar buffer from the checkpoint
    (blk.N.layer_output_scale, one value)."""
    if arch != "gemma4":
        return []
    t = _text(config)
    extra: list[tuple[str, tuple[int, ...]]] = [("rope_freqs.weight", (int(t.get("global_head_dim") or 512) // 2,))]
    return extra + [(f"blk.{i}.layer_output_scale.weight", (1,)) for i in range(t["num_hidden_layers"])]
