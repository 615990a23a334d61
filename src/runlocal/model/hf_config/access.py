"""Reading one config.json level as transformers 5.23's config class would hold it: the class defaults for
fields a config.json may leave out, bounds checks, and a clear error naming a missing or malformed field."""

from __future__ import annotations

import builtins  # _Cfg.int (a config field) shadows int inside the class: its annotations say builtins.int
from typing import Any

from ...errors import ModelFormatError
from ..limits import _shown as shown
from ..limits import check_config_value, check_heads, printable

# ------------------------------------------------------------------------------------------------
# config access

# Defaults of transformers 5.23's config classes for the fields that shape tensors or the cache,
# used only when a config.json leaves the field out (an explicit null stays null).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False},
    "mistral": {"sliding_window": 4096},
    "mixtral": {"sliding_window": None, "num_local_experts": 8, "num_experts_per_tok": 2},
    "qwen2": {"use_sliding_window": False, "max_window_layers": 28},
    "qwen2_5_vl_text": {"use_sliding_window": False, "max_window_layers": 80},
    "qwen3": {"head_dim": 128, "use_sliding_window": False, "max_window_layers": 28},
    "qwen2_moe": {"qkv_bias": True, "decoder_sparse_step": 1, "num_experts": 60, "num_experts_per_tok": 4,
                  "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632},
    "qwen3_moe": {"decoder_sparse_step": 1, "num_experts": 128, "num_experts_per_tok": 8,
                  "moe_intermediate_size": 768, "use_sliding_window": False},
    "qwen3_next": {"head_dim": 256, "decoder_sparse_step": 1, "num_experts": 512, "num_experts_per_tok": 10,
                   "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
                   "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                   "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4},
    # Qwen3.5 / 3.6 text models (Qwen3_5TextConfig, Qwen3_5MoeTextConfig): Qwen3-Next's linear attention
    "qwen3_5_text": {"tie_word_embeddings": False, "head_dim": 256, "linear_conv_kernel_dim": 4,
                     "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
                     "linear_num_value_heads": 32, "full_attention_interval": 4},
    "qwen3_5_moe_text": {"tie_word_embeddings": False, "head_dim": 256, "num_experts": 256, "num_experts_per_tok": 8,
                         "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
                         "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                         "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4},
    "gemma": {"tie_word_embeddings": True, "head_dim": 256},
    "gemma2": {"tie_word_embeddings": True, "head_dim": 256, "sliding_window": 4096},
    "gemma3_text": {"tie_word_embeddings": True, "vocab_size": 262_208, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096,
                    "max_position_embeddings": 131_072, "sliding_window_pattern": 6},
    # Gemma 4 (transformers 5.24 configuration_gemma4.py Gemma4TextConfig / Gemma4VisionConfig / Gemma4AudioConfig)
    "gemma4_text": {"tie_word_embeddings": True, "vocab_size": 262_144, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 30, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                    "max_position_embeddings": 131_072, "sliding_window": 512, "hidden_size_per_layer_input": 256,
                    "vocab_size_per_layer_input": 262_144, "global_head_dim": 512, "num_kv_shared_layers": 0},
    "gemma4_vision": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 16, "num_attention_heads": 12,
                      "num_key_value_heads": 12, "head_dim": 64, "patch_size": 16, "position_embedding_size": 10_240},
    "gemma4_audio": {"hidden_size": 1024, "num_hidden_layers": 12, "num_attention_heads": 8, "conv_kernel_size": 5,
                     "output_proj_dims": 1536},
    "dbrx": {"tie_word_embeddings": False},     # DbrxConfig
    "cohere": {"tie_word_embeddings": True, "use_qk_norm": False},
    "cohere2": {"tie_word_embeddings": True, "sliding_window": 4096, "sliding_window_pattern": 4},
    "smollm3": {"tie_word_embeddings": True, "use_sliding_window": False, "no_rope_layer_interval": 4},
    "glm4": {"head_dim": 128, "attention_bias": True},
    "phi": {"qk_layernorm": False},
    "gpt_neox": {"tie_word_embeddings": False, "attention_bias": True, "max_position_embeddings": 2048},
    "stablelm": {"tie_word_embeddings": False, "use_qkv_bias": False, "qk_layernorm": False,
                 "use_parallel_residual": False},
    "olmo": {"tie_word_embeddings": False, "attention_bias": False},
    "minimax_m2": {"tie_word_embeddings": False, "use_qk_norm": True, "num_local_experts": 256,
                   "num_experts_per_tok": 8},
    "glm4_moe": {"tie_word_embeddings": False, "attention_bias": False, "use_qk_norm": False, "n_routed_experts": 128,
                 "n_shared_experts": 1, "moe_intermediate_size": 1408, "first_k_dense_replace": 1,
                 "num_experts_per_tok": 8},
    "nemotron_h": {"tie_word_embeddings": False, "head_dim": 128, "mamba_num_heads": 128, "mamba_head_dim": 64,
                   "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4, "use_conv_bias": True,
                   "mamba_proj_bias": False, "chunk_size": 128, "n_routed_experts": 8, "num_experts_per_tok": 2,
                   "moe_intermediate_size": 7688, "moe_shared_expert_intermediate_size": 7688},
    "olmo3": {"tie_word_embeddings": False, "attention_bias": False, "sliding_window": 4096},
    "falcon": {"tie_word_embeddings": True, "multi_query": True, "parallel_attn": True, "bias": False,
               "new_decoder_architecture": False, "alibi": False, "max_position_embeddings": 2048},
    "gpt_oss": {"head_dim": 64, "sliding_window": 128, "attention_bias": True, "num_local_experts": 128,
                "num_experts_per_tok": 4},
    "deepseek_v2": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                    "v_head_dim": 128, "first_k_dense_replace": 0, "n_routed_experts": 64, "n_shared_experts": 2,
                    "moe_intermediate_size": 1407},
    "deepseek_v3": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                    "v_head_dim": 128, "first_k_dense_replace": 3, "n_routed_experts": 256, "n_shared_experts": 1,
                    "moe_intermediate_size": 2048, "num_experts_per_tok": 8, "num_nextn_predict_layers": 1},
    "jamba": {"num_experts": 16, "num_experts_per_tok": 2, "expert_layer_period": 2, "expert_layer_offset": 1,
              "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4,
              "mamba_expand": 2, "mamba_dt_rank": "auto", "mamba_conv_bias": True, "mamba_proj_bias": False},
    "falcon_h1": {"mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1,
                  "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True,
                  "mamba_proj_bias": False, "mamba_rms_norm": False, "projectors_bias": False},
    "granitemoe": {"num_local_experts": 8, "num_experts_per_tok": 2},
    "granitemoehybrid": {"num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 1024,
                         "mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_head": "auto",
                         "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True, "mamba_proj_bias": False},
    "mamba": {"tie_word_embeddings": True, "state_size": 16, "expand": 2, "conv_kernel": 4, "use_bias": False,
              "use_conv_bias": True, "time_step_rank": "auto"},
    "mamba2": {"tie_word_embeddings": False, "num_heads": 128, "head_dim": 64, "state_size": 128, "expand": 2,
               "conv_kernel": 4, "n_groups": 8, "use_bias": False, "use_conv_bias": True},
    "llama4_text": {"head_dim": 128, "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
                    "intermediate_size_mlp": 16384, "no_rope_layer_interval": 4, "attention_chunk_size": 8192},
    "mllama_text_model": {"cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38]},
    # multimodal wrappers (top level) and their vision towers
    "gemma3": {"tie_word_embeddings": True},
    "gemma4": {"tie_word_embeddings": True},
    "mistral3": {"tie_word_embeddings": True, "spatial_merge_size": 2, "vision_feature_layer": -1,
                 "multimodal_projector_bias": False},
    "qwen2_5_vl": {"tie_word_embeddings": False},
    "qwen3_5": {"tie_word_embeddings": False},
    # Qwen3-VL (Qwen3VLConfig / Qwen3VLMoeConfig and their text configs)
    "qwen3_vl": {"tie_word_embeddings": False},
    "qwen3_vl_moe": {"tie_word_embeddings": False},
    "qwen3_vl_text": {"head_dim": 128},
    "qwen3_vl_moe_text": {"head_dim": 128, "decoder_sparse_step": 1, "num_experts": 60, "num_experts_per_tok": 4,
                          "moe_intermediate_size": 1408},
    "qwen3_5_moe": {"tie_word_embeddings": False},
    "siglip_vision_model": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                            "num_attention_heads": 12, "num_channels": 3, "image_size": 224, "patch_size": 16,
                            "vision_use_head": True},
    "pixtral": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_channels": 3,
                "patch_size": 16},
    "qwen2_5_vl_vision": {"depth": 32, "hidden_size": 3584, "intermediate_size": 3420, "in_channels": 3,
                          "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584},
    "qwen3_5_vision": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "in_channels": 3, "patch_size": 16,
                       "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584,
                       "num_position_embeddings": 2304},
    "qwen3_vl_vision": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "in_channels": 3, "patch_size": 16,
                        "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584,
                        "num_position_embeddings": 2304, "deepstack_visual_indexes": [8, 16, 24]},
    "llama4_vision_model": {"hidden_size": 768, "num_hidden_layers": 34, "num_attention_heads": 16,
                            "num_channels": 3, "intermediate_size": 5632, "vision_output_dim": 7680,
                            "image_size": 448, "patch_size": 14, "projector_input_dim": 4096,
                            "projector_output_dim": 4096},
    "mllama_vision_model": {"hidden_size": 1280, "num_hidden_layers": 32, "num_global_layers": 8,
                            "attention_heads": 16, "num_channels": 3, "intermediate_size": 5120,
                            "vision_output_dim": 7680, "image_size": 448, "patch_size": 14, "max_num_tiles": 4,
                            "supported_aspect_ratios": [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]]},
}

_WHAT = {"hidden_size": "the model width", "num_hidden_layers": "the number of decoder layers",
         "num_attention_heads": "the number of attention heads", "vocab_size": "the vocabulary size",
         "intermediate_size": "the MLP width"}


class _Cfg:
    """One config level (top, text_config or vision_config) with its class defaults behind it."""

    def __init__(self, d: dict[str, Any], model_type: str, where: str):
        self.d, self.model_type, self.where = d, model_type, where
        self.defaults = _DEFAULTS.get(model_type, {})

    def get(self, key: str, default: Any = None) -> Any:
        """A field as the config class would hold it; known keys are checked (type and bounds, limits.py)."""
        value = self.d[key] if key in self.d else self.defaults.get(key, default)
        return check_config_value(key, value, self.where)

    def flag(self, key: str, default: bool = False) -> bool:
        return bool(self.get(key, default))

    def int(self, key: str, default: int | None = None) -> builtins.int:
        """A positive integer field; a missing or malformed one is a ModelFormatError naming it."""
        v = self.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            what = f", {_WHAT[key]}" if key in _WHAT else ""
            got = "missing" if v is None else shown(v)
            raise ModelFormatError(f"{self.where}: {key} is {got} (expected a positive integer{what}, "
                                   f"for model_type '{self.model_type}')")
        return v

    # the usual attention shape
    @property
    def h(self) -> builtins.int:
        return self.int("hidden_size")

    @property
    def n_layers(self) -> builtins.int:
        return self.int("num_hidden_layers")

    @property
    def heads(self) -> builtins.int:
        return self.int("num_attention_heads")

    @property
    def kv_heads(self) -> builtins.int:
        kv = self.get("num_key_value_heads") or self.heads
        check_heads(self.heads, kv, self.where, ("num_attention_heads", "num_key_value_heads"))
        return kv

    @property
    def head_dim(self) -> builtins.int:
        hd = self.get("head_dim") or self.h // self.heads
        if not hd:
            raise ModelFormatError(f"{self.where}: no head_dim and hidden_size {self.h} < "
                                   f"num_attention_heads {self.heads} (expected head_dim, or hidden_size ≥ heads)")
        return hd

    @property
    def vocab(self) -> builtins.int:
        return self.int("vocab_size")

    def per_layer(self, key: str, n: builtins.int) -> list[Any] | None:
        """A list with one entry per layer (no_rope_layers), or None when absent; another length is an error."""
        v = self.get(key)
        if v and len(v) != n:
            raise ModelFormatError(f"{self.where}: {key} has {len(v)} entries "
                                   f"(expected one per layer: {n})")
        return v or None

    def sub(self, key: str, model_type: str) -> _Cfg:
        d = self.d.get(key)
        d = d if isinstance(d, dict) else {}
        return _Cfg(d, printable(d.get("model_type") or model_type, 100), f"{self.where} {key}")


