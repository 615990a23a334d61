"""Write sparse, zero-weight GGUF files with the exact architecture of real models.

Each file carries the metadata keys and the tensor list (names, shapes, types) that
llama.cpp's converter (convert_hf_to_gguf.py) and llama-quantize would produce for
the model named in MODELS, but every tensor's data is zero.  The data section is
never written: after the header and the tensor infos, the file is extended to its
full length with truncate(), so the data is a hole that reads back as zeros and an
8B or 30B model costs no disk (check with `du` vs `ls -l`).

Dimensions come from each model's published config.json (the Hugging Face repo id
is in MODELS[...]["repo"]); the names and key spellings come from gguf-py's
MODEL_ARCH / MODEL_TENSORS / TENSOR_NAMES tables and its GGUFWriter helpers.

Deviations from a converted file, on purpose:
  * no tokenizer: tokenizer.ggml.model = "none" plus "<arch>.vocab_size", which
    makes llama.cpp create that many dummy tokens (feed token ids, not text);
  * values that cannot change memory (multipliers, chat template, rope factors'
    values) are left out or zero.

Weight types ("--weights"):
  q4_0  (default) what `llama-quantize ... Q4_0` gives: every 2-D+ matrix whose
        rows are a multiple of 32 -> Q4_0, output.weight -> Q6_K, and F32 for 1-D
        tensors, norms, routers (ffn_gate_inp), SSM conv/A/D/dt/norm, attention
        sinks, rope factors.  gpt-oss keeps its experts in MXFP4 (as published) and
        gets Q8_0 for the other matrices (as ggml-org's gpt-oss-20b GGUF).
  q8_0  the same with Q8_0 for the matrices (output.weight too).
  f16   the same with F16 for the matrices.

It imports only gguf and numpy (with the standard library), so a bare GPU machine runs it with the
repository's src/ on PYTHONPATH (measurements/llamacpp/cuda_run.sh). Formerly measurements/llamacpp/
make_zero_gguf.py: the files' general.comment still says so, so the headers (and every figure measured
over them) stay byte for byte those of the recorded runs.

Usage:
  python -m runlocal.evidence.zero_gguf --out-dir /path/to/dir [--weights q4_0] [model ...]
  python -m runlocal.evidence.zero_gguf --list
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import gguf
import numpy as np
from gguf import MODEL_TENSOR as T
from gguf import GGMLQuantizationType as QT

# ---------------------------------------------------------------------------
# Real models: the subset of config.json that determines the GGUF layout.
# ---------------------------------------------------------------------------
MODELS: dict[str, dict] = {
    "llama-3.1-8b": {
        "repo": "meta-llama/Llama-3.1-8B",
        "arch": "llama",
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False,
        # rope_scaling {"rope_type": "llama3", factor 8, low 1, high 4, original 8192}
        # -> the converter writes a rope_freqs tensor of head_dim/2 F32 values.
        "rope_llama3": True,
    },
    "qwen3-4b": {
        "repo": "Qwen/Qwen3-4B",
        "arch": "qwen3",
        "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
    },
    "llama-3.2-3b": {   # the catalog's figures (model/catalog): Llama-3.2-3B's config.json
        "repo": "meta-llama/Llama-3.2-3B",
        "arch": "llama",
        "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
        "num_attention_heads": 24, "num_key_value_heads": 8, "vocab_size": 128256,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True, "rope_llama3": True,
    },
    "qwen3-14b": {      # Qwen3-14B's config.json, as the catalog holds it
        "repo": "Qwen/Qwen3-14B",
        "arch": "qwen3",
        "hidden_size": 5120, "intermediate_size": 17408, "num_hidden_layers": 40,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    },
    "qwen3-8b": {
        "repo": "Qwen/Qwen3-8B",
        "arch": "qwen3",
        "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    },
    "gemma-3-4b": {
        "repo": "google/gemma-3-4b-it",  # text_config
        "arch": "gemma3",
        "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "vocab_size": 262208, "max_position_embeddings": 131072, "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0, "rope_scaling_linear": 8.0,
        "sliding_window": 1024, "sliding_window_pattern": 6,  # 5 local : 1 global
        "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
    },
    "gemma-2-9b": {
        "repo": "google/gemma-2-9b",
        "arch": "gemma2",
        "hidden_size": 3584, "intermediate_size": 14336, "num_hidden_layers": 42,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
        "vocab_size": 256000, "max_position_embeddings": 8192,
        "sliding_window": 4096,  # every other layer (llama.cpp: pattern 2)
        "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
    },
    "phi-3-mini-4k": {
        "repo": "microsoft/Phi-3-mini-4k-instruct",
        "arch": "phi3",
        "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
        "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "sliding_window": 2047,
        "tie_word_embeddings": False,
    },
    "qwen3-30b-a3b": {
        "repo": "Qwen/Qwen3-30B-A3B",
        "arch": "qwen3moe",
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
        "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
        "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    },
    "gpt-oss-20b": {
        "repo": "openai/gpt-oss-20b",
        "arch": "gpt-oss",
        "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 24,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
        "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088,
        "max_position_embeddings": 131072, "rope_theta": 150000.0, "rms_norm_eps": 1e-5,
        "sliding_window": 128,  # layer_types: sliding, full, sliding, full, ...
        "rope_scaling_yarn": {"factor": 32.0, "original_max_position_embeddings": 4096,
                              "beta_fast": 32.0, "beta_slow": 1.0},
        "tie_word_embeddings": False,
    },
    "deepseek-v2-lite": {
        "repo": "deepseek-ai/DeepSeek-V2-Lite",
        "arch": "deepseek2",
        "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
        "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
        "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 64,
        "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
        "n_group": 1, "topk_group": 1, "routed_scaling_factor": 1.0,
        "scoring_func": "softmax", "vocab_size": 102400,
        "max_position_embeddings": 163840, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
        "rope_scaling_yarn": {"factor": 40.0, "original_max_position_embeddings": 4096,
                              "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 0.707},
        "tie_word_embeddings": False,
    },
    "granite-4.0-h-tiny": {
        "repo": "ibm-granite/granite-4.0-h-tiny",
        "arch": "granitehybrid",
        "hidden_size": 1536, "intermediate_size": 512, "shared_intermediate_size": 1024,
        "num_hidden_layers": 40, "num_attention_heads": 12, "num_key_value_heads": 4,
        "num_local_experts": 64, "num_experts_per_tok": 6, "vocab_size": 100352,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
        "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_n_heads": 48, "mamba_d_head": 64,
        "mamba_expand": 2, "mamba_d_conv": 4, "mamba_conv_bias": True,
        "position_embedding_type": "nope",
        "layer_types": (["mamba"] * 5 + ["attention"] + ["mamba"] * 9 + ["attention"]
                        + ["mamba"] * 9 + ["attention"] + ["mamba"] * 9 + ["attention"]
                        + ["mamba"] * 4),
        "tie_word_embeddings": True,
    },
}

# tensors that stay F32 whatever the weight type (converter + llama-quantize rules)
F32_TENSORS = {
    T.FFN_GATE_INP, T.SSM_CONV1D, T.SSM_A, T.SSM_D, T.SSM_DT, T.SSM_NORM,
    T.ATTN_SINKS, T.ROPE_FREQS, T.ROPE_FACTORS_LONG, T.ROPE_FACTORS_SHORT,
}
MATRIX_TYPE = {"q4_0": QT.Q4_0, "q8_0": QT.Q8_0, "f16": QT.F16}
FILE_TYPE = {"q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
             "f16": gguf.LlamaFileType.MOSTLY_F16}


def _nbytes(ne: list[int], qtype: QT) -> int:
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    assert ne[0] % block == 0, (ne, qtype)
    n = ne[0] // block * size
    for d in ne[1:]:
        n *= d
    return n


class Builder:
    def __init__(self, model: str, weights: str):
        self.name = model
        self.cfg = MODELS[model]
        self.weights = weights
        self.arch_name = self.cfg["arch"]
        self.arch = next(a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == self.arch_name)
        self.allowed = set(gguf.MODEL_TENSORS[self.arch])
        self.tensors: list[tuple[str, list[int], QT]] = []  # (name, ne (ggml order), type)

    # -- tensors -----------------------------------------------------------
    def add(self, kind: T, ne: list[int], bid: int | None = None, suffix: str | None = ".weight",
            qtype: QT | None = None):
        assert kind in self.allowed, f"{kind.name} not in MODEL_TENSORS[{self.arch_name}]"
        name = gguf.TENSOR_NAMES[kind].format(bid=bid) + (suffix or "")
        if qtype is None:
            qtype = self.pick_type(kind, name, ne)
        self.tensors.append((name, list(ne), qtype))

    def pick_type(self, kind: T, name: str, ne: list[int]) -> QT:
        if name.endswith(".bias") or kind in F32_TENSORS or len(ne) == 1 or "norm" in name:
            return QT.F32
        mat = MATRIX_TYPE[self.weights]
        if self.arch_name == "gpt-oss" and self.weights == "q4_0":
            mat = QT.Q8_0  # ggml-org/gpt-oss-20b-GGUF: MXFP4 experts, Q8_0 elsewhere
        if kind == T.OUTPUT and self.weights == "q4_0" and self.arch_name != "gpt-oss":
            mat = QT.Q6_K  # llama-quantize keeps output.weight at Q6_K for Q4_0
        block = gguf.GGML_QUANT_SIZES[mat][0]
        if ne[0] % block != 0:
            return QT.F16
        return mat

    # -- metadata ----------------------------------------------------------
    def common_kv(self, w: gguf.GGUFWriter):
        c = self.cfg
        w.add_name(f"{self.name} (zero weights, dims of {c['repo']})")
        w.add_string("general.source.repo_id", c["repo"])
        w.add_string("general.comment", "runlocal measurements/llamacpp/make_zero_gguf.py: "
                     "all tensor data is zero (sparse file)")
        w.add_block_count(c["num_hidden_layers"])
        w.add_context_length(c["max_position_embeddings"])
        w.add_embedding_length(c["hidden_size"])
        w.add_feed_forward_length(c["intermediate_size"])
        w.add_head_count(c["num_attention_heads"])
        w.add_head_count_kv(c["num_key_value_heads"])
        if "rope_theta" in c:
            w.add_rope_freq_base(c["rope_theta"])
        w.add_layer_norm_rms_eps(c["rms_norm_eps"])
        if "head_dim" in c:
            w.add_key_length(c["head_dim"])
            w.add_value_length(c["head_dim"])
        ft = FILE_TYPE[self.weights]
        if self.arch_name == "gpt-oss":
            ft = gguf.LlamaFileType.MOSTLY_MXFP4_MOE
        w.add_file_type(ft)
        w.add_vocab_size(c["vocab_size"])
        w.add_tokenizer_model("none")
        if self.weights != "f16" or self.arch_name == "gpt-oss":
            w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    def yarn_kv(self, w: gguf.GGUFWriter):
        y = self.cfg["rope_scaling_yarn"]
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(y["factor"])
        w.add_rope_scaling_orig_ctx_len(y["original_max_position_embeddings"])
        w.add_rope_scaling_yarn_beta_fast(y["beta_fast"])
        w.add_rope_scaling_yarn_beta_slow(y["beta_slow"])

    # -- architectures -----------------------------------------------------
    def build(self, w: gguf.GGUFWriter):
        getattr(self, "arch_" + self.arch_name.replace("-", "_"))(w)

    def _embed_and_output(self, n_embd: int, n_vocab: int, tied: bool):
        self.add(T.TOKEN_EMBD, [n_embd, n_vocab])
        self.add(T.OUTPUT_NORM, [n_embd])
        if not tied:
            self.add(T.OUTPUT, [n_embd, n_vocab])

    def _attn(self, i: int, n_embd: int, n_q: int, n_kv: int, bias: bool = False):
        self.add(T.ATTN_Q, [n_embd, n_q], i)
        self.add(T.ATTN_K, [n_embd, n_kv], i)
        self.add(T.ATTN_V, [n_embd, n_kv], i)
        if bias:
            self.add(T.ATTN_Q, [n_q], i, ".bias")
            self.add(T.ATTN_K, [n_kv], i, ".bias")
            self.add(T.ATTN_V, [n_kv], i, ".bias")
        self.add(T.ATTN_OUT, [n_q, n_embd], i)

    def _ffn(self, i: int, n_embd: int, n_ff: int):
        self.add(T.FFN_GATE, [n_embd, n_ff], i)
        self.add(T.FFN_UP, [n_embd, n_ff], i)
        self.add(T.FFN_DOWN, [n_ff, n_embd], i)

    def arch_llama(self, w):
        c = self.cfg
        self.common_kv(w)
        hd = c["hidden_size"] // c["num_attention_heads"]
        w.add_rope_dimension_count(hd)
        e, nl = c["hidden_size"], c["num_hidden_layers"]
        self._embed_and_output(e, c["vocab_size"], c["tie_word_embeddings"])
        if c.get("rope_llama3"):
            self.add(T.ROPE_FREQS, [hd // 2])
        for i in range(nl):
            self.add(T.ATTN_NORM, [e], i)
            self._attn(i, e, c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd)
            self.add(T.FFN_NORM, [e], i)
            self._ffn(i, e, c["intermediate_size"])

    def arch_qwen3(self, w):
        c = self.cfg
        self.common_kv(w)
        hd, e = c["head_dim"], c["hidden_size"]
        self._embed_and_output(e, c["vocab_size"], c["tie_word_embeddings"])
        for i in range(c["num_hidden_layers"]):
            self.add(T.ATTN_NORM, [e], i)
            self._attn(i, e, c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd)
            self.add(T.ATTN_Q_NORM, [hd], i)
            self.add(T.ATTN_K_NORM, [hd], i)
            self.add(T.FFN_NORM, [e], i)
            self._ffn(i, e, c["intermediate_size"])

    def arch_qwen3moe(self, w):
        c = self.cfg
        self.common_kv(w)
        w.add_expert_count(c["num_experts"])
        w.add_expert_used_count(c["num_experts_per_tok"])
        w.add_expert_feed_forward_length(c["moe_intermediate_size"])
        hd, e, nx, ff = c["head_dim"], c["hidden_size"], c["num_experts"], c["moe_intermediate_size"]
        self._embed_and_output(e, c["vocab_size"], c["tie_word_embeddings"])
        for i in range(c["num_hidden_layers"]):
            self.add(T.ATTN_NORM, [e], i)
            self._attn(i, e, c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd)
            self.add(T.ATTN_Q_NORM, [hd], i)
            self.add(T.ATTN_K_NORM, [hd], i)
            self.add(T.FFN_NORM, [e], i)
            self.add(T.FFN_GATE_INP, [e, nx], i)
            self.add(T.FFN_GATE_EXP, [e, ff, nx], i)
            self.add(T.FFN_UP_EXP, [e, ff, nx], i)
            self.add(T.FFN_DOWN_EXP, [ff, e, nx], i)

    def _gemma_layers(self, with_qk_norm: bool):
        c = self.cfg
        hd, e = c["head_dim"], c["hidden_size"]
        self._embed_and_output(e, c["vocab_size"], True)
        for i in range(c["num_hidden_layers"]):
            self.add(T.ATTN_NORM, [e], i)
            self._attn(i, e, c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd)
            self.add(T.ATTN_POST_NORM, [e], i)
            if with_qk_norm:
                self.add(T.ATTN_Q_NORM, [hd], i)
                self.add(T.ATTN_K_NORM, [hd], i)
            self.add(T.FFN_PRE_NORM, [e], i)  # same name, "blk.N.ffn_norm"
            self._ffn(i, e, c["intermediate_size"])
            self.add(T.FFN_POST_NORM, [e], i)

    def arch_gemma3(self, w):
        c = self.cfg
        self.common_kv(w)
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(c["rope_scaling_linear"])
        w.add_rope_freq_base_swa(c["rope_local_base_freq"])
        w.add_sliding_window(c["sliding_window"])
        # sliding_window_pattern 6 is llama.cpp's default for gemma3; the converter does not write it
        self._gemma_layers(with_qk_norm=True)

    def arch_gemma2(self, w):
        c = self.cfg
        self.common_kv(w)
        w.add_attn_logit_softcapping(c["attn_logit_softcapping"])
        w.add_final_logit_softcapping(c["final_logit_softcapping"])
        w.add_sliding_window(c["sliding_window"])
        self._gemma_layers(with_qk_norm=False)

    def arch_phi3(self, w):
        c = self.cfg
        self.common_kv(w)
        e, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        hd = e // nh
        w.add_rope_scaling_orig_ctx_len(c["original_max_position_embeddings"])
        w.add_rope_dimension_count(hd)
        w.add_sliding_window(c["sliding_window"])
        self._embed_and_output(e, c["vocab_size"], c["tie_word_embeddings"])
        for i in range(c["num_hidden_layers"]):
            self.add(T.ATTN_NORM, [e], i)
            self.add(T.ATTN_QKV, [e, e + 2 * nkv * hd], i)  # fused qkv_proj
            self.add(T.ATTN_OUT, [e, e], i)
            self.add(T.FFN_NORM, [e], i)
            self.add(T.FFN_UP, [e, 2 * c["intermediate_size"]], i)  # fused gate_up_proj
            self.add(T.FFN_DOWN, [c["intermediate_size"], e], i)

    def arch_gpt_oss(self, w):
        c = self.cfg
        self.common_kv(w)
        self.yarn_kv(w)
        w.add_expert_count(c["num_local_experts"])
        w.add_expert_used_count(c["num_experts_per_tok"])
        w.add_sliding_window(c["sliding_window"])
        w.add_expert_feed_forward_length(c["intermediate_size"])
        hd, e, nx, ff = c["head_dim"], c["hidden_size"], c["num_local_experts"], c["intermediate_size"]
        nq, nkv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
        self._embed_and_output(e, c["vocab_size"], False)
        for i in range(c["num_hidden_layers"]):
            self.add(T.ATTN_NORM, [e], i)
            self.add(T.ATTN_POST_NORM, [e], i)
            self._attn(i, e, nq, nkv, bias=True)
            self.add(T.ATTN_OUT, [e], i, ".bias")
            self.add(T.ATTN_SINKS, [c["num_attention_heads"]], i)
            self.add(T.FFN_GATE_INP, [e, nx], i)
            self.add(T.FFN_GATE_INP, [nx], i, ".bias")
            for kind, ne in ((T.FFN_GATE_EXP, [e, ff, nx]), (T.FFN_UP_EXP, [e, ff, nx]),
                             (T.FFN_DOWN_EXP, [ff, e, nx])):
                self.add(kind, ne, i, qtype=QT.MXFP4)
                self.add(kind, [ne[1], nx], i, ".bias")

    def arch_deepseek2(self, w):
        c = self.cfg
        # the converter turns MLA into MQA: head_count_kv = 1
        c = dict(c, num_key_value_heads=1)
        self.cfg = c
        self.common_kv(w)
        self.yarn_kv(w)
        w.add_rope_scaling_yarn_log_mul(0.1 * c["rope_scaling_yarn"]["mscale_all_dim"])
        w.add_expert_count(c["n_routed_experts"])
        w.add_expert_used_count(c["num_experts_per_tok"])
        w.add_expert_group_count(c["n_group"])
        w.add_expert_group_used_count(c["topk_group"])
        w.add_expert_gating_func(gguf.ExpertGatingFuncType.SOFTMAX)
        w.add_leading_dense_block_count(c["first_k_dense_replace"])
        kvr, rope, nope, vd = c["kv_lora_rank"], c["qk_rope_head_dim"], c["qk_nope_head_dim"], c["v_head_dim"]
        w.add_kv_lora_rank(kvr)
        w.add_key_length(kvr + rope)
        w.add_value_length(kvr)
        w.add_key_length_mla(nope + rope)
        w.add_value_length_mla(vd)
        w.add_expert_feed_forward_length(c["moe_intermediate_size"])
        w.add_expert_shared_count(c["n_shared_experts"])
        w.add_expert_weights_scale(c["routed_scaling_factor"])
        w.add_rope_dimension_count(rope)
        e, nh, nx, ff = c["hidden_size"], c["num_attention_heads"], c["n_routed_experts"], c["moe_intermediate_size"]
        self._embed_and_output(e, c["vocab_size"], c["tie_word_embeddings"])
        for i in range(c["num_hidden_layers"]):
            self.add(T.ATTN_NORM, [e], i)
            self.add(T.ATTN_Q, [e, nh * (nope + rope)], i)  # q_lora_rank is null for Lite
            self.add(T.ATTN_KV_A_MQA, [e, kvr + rope], i)
            self.add(T.ATTN_KV_A_NORM, [kvr], i)
            self.add(T.ATTN_K_B, [nope, kvr, nh], i)
            self.add(T.ATTN_V_B, [kvr, vd, nh], i)
            self.add(T.ATTN_OUT, [nh * vd, e], i)
            self.add(T.FFN_NORM, [e], i)
            if i < c["first_k_dense_replace"]:
                self._ffn(i, e, c["intermediate_size"])
            else:
                self.add(T.FFN_GATE_INP, [e, nx], i)
                self.add(T.FFN_GATE_EXP, [e, ff, nx], i)
                self.add(T.FFN_UP_EXP, [e, ff, nx], i)
                self.add(T.FFN_DOWN_EXP, [ff, e, nx], i)
                sh = ff * c["n_shared_experts"]
                self.add(T.FFN_GATE_SHEXP, [e, sh], i)
                self.add(T.FFN_UP_SHEXP, [e, sh], i)
                self.add(T.FFN_DOWN_SHEXP, [sh, e], i)

    def arch_granitehybrid(self, w):
        c = self.cfg
        attn = [i for i, t in enumerate(c["layer_types"]) if t == "attention"]
        nl = c["num_hidden_layers"]
        assert len(c["layer_types"]) == nl
        # GraniteHybridModel.set_gguf_parameters: NoPE hybrids get context_length 2**20
        self.cfg = c = dict(c, max_position_embeddings=2 ** 20)
        self.common_kv(w)
        w.add_head_count_kv([c["num_key_value_heads"] if i in attn else 0 for i in range(nl)])
        w.add_expert_count(c["num_local_experts"])
        w.add_expert_used_count(c["num_experts_per_tok"])
        w.add_expert_shared_feed_forward_length(c["shared_intermediate_size"])
        e = c["hidden_size"]
        d_inner = c["mamba_expand"] * e
        ng, ds, nsh, dconv = c["mamba_n_groups"], c["mamba_d_state"], c["mamba_n_heads"], c["mamba_d_conv"]
        w.add_ssm_conv_kernel(dconv)
        w.add_ssm_state_size(ds)
        w.add_ssm_group_count(ng)
        w.add_ssm_inner_size(d_inner)
        w.add_ssm_time_step_rank(nsh)
        w.add_rope_scaling_finetuned(False)  # NoPE
        hd = e // c["num_attention_heads"]
        nx, ff, sh = c["num_local_experts"], c["intermediate_size"], c["shared_intermediate_size"]
        self._embed_and_output(e, c["vocab_size"], c["tie_word_embeddings"])
        for i in range(nl):
            self.add(T.ATTN_NORM, [e], i)
            if i in attn:
                self._attn(i, e, c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd)
            else:
                conv_dim = d_inner + 2 * ng * ds
                self.add(T.SSM_IN, [e, 2 * d_inner + 2 * ng * ds + nsh], i)
                self.add(T.SSM_CONV1D, [dconv, conv_dim], i)
                if c["mamba_conv_bias"]:
                    self.add(T.SSM_CONV1D, [conv_dim], i, ".bias")
                self.add(T.SSM_DT, [nsh], i, ".bias")
                self.add(T.SSM_A, [1, nsh], i, None)
                self.add(T.SSM_D, [1, nsh], i, None)
                self.add(T.SSM_NORM, [d_inner // ng, ng], i)
                self.add(T.SSM_OUT, [d_inner, e], i)
            self.add(T.FFN_NORM, [e], i)
            self.add(T.FFN_GATE_INP, [e, nx], i)
            self.add(T.FFN_GATE_EXP, [e, ff, nx], i)
            self.add(T.FFN_UP_EXP, [e, ff, nx], i)
            self.add(T.FFN_DOWN_EXP, [ff, e, nx], i)
            self.add(T.FFN_GATE_SHEXP, [e, sh], i)
            self.add(T.FFN_UP_SHEXP, [e, sh], i)
            self.add(T.FFN_DOWN_SHEXP, [sh, e], i)


def write_zero_gguf(path: Path, arch: str, kv: dict[str, Any],
                    tensors: list[tuple[str, list[int], QT]]) -> int:
    """The one zero-weight GGUF writer: ``kv`` ("{arch}.key" or "general.key" → value, its GGUF type from the
    Python value; a ``gguf.GGUFValue`` keeps its own) and ``tensors`` (name, ne in ggml order, type).
    The data section is never written: the file is extended to its full length with truncate(), a hole that reads
    back as zeros. Returns the file's length in bytes."""
    w = gguf.GGUFWriter(path, arch)
    for key, value in kv.items():
        _add_kv(w, key.format(arch=arch), value)
    for name, ne, qt in tensors:
        # GGUFWriter takes numpy order (reversed ggml ne); a non-uint8 dtype keeps the
        # shape in elements, raw_dtype sets the stored type
        w.add_tensor_info(name, list(reversed(ne)), np.dtype(np.float32), _nbytes(ne, qt), raw_dtype=qt)
    w.write_header_to_file(path)
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    assert w.fout is not None       # write_header_to_file(path) opened it
    fout = w.fout[0]
    data_start = gguf.GGUFWriter.ggml_pad(fout.tell(), w.data_alignment)
    data_len = sum(gguf.GGUFWriter.ggml_pad(_nbytes(ne, qt), w.data_alignment) for _, ne, qt in tensors)
    fout.truncate(data_start + data_len)  # the hole reads as zeros
    fout.close()
    w.fout = None
    return data_start + data_len


def _add_kv(w: gguf.GGUFWriter, key: str, value: Any) -> None:
    if isinstance(value, gguf.GGUFValue):           # a typed value, as another GGUFWriter holds it
        w.add_key_value(key, value.value, value.type, value.sub_type)
    elif isinstance(value, bool):
        w.add_bool(key, value)
    elif isinstance(value, int):
        w.add_uint32(key, value)
    elif isinstance(value, float):
        w.add_float32(key, value)
    elif isinstance(value, str):
        w.add_string(key, value)
    elif isinstance(value, list):
        w.add_array(key, value)
    else:
        raise TypeError(f"{key}: {type(value).__name__}")


def write_model(model: str, out_dir: Path, weights: str = "q4_0") -> dict:
    b = Builder(model, weights)
    path = out_dir / f"{model}.{weights}.gguf"
    w = gguf.GGUFWriter(path, b.arch_name)     # collects Builder's keys; write_zero_gguf writes them
    b.build(w)
    kv = {key: field for key, field in w.kv_data[0].items() if key != "general.architecture"}
    file_bytes = write_zero_gguf(path, b.arch_name, kv, b.tensors)
    counts: dict[str, int] = {}
    bytes_by_type: dict[str, int] = {}
    for _, ne, qt in b.tensors:
        counts[qt.name] = counts.get(qt.name, 0) + 1
        bytes_by_type[qt.name] = bytes_by_type.get(qt.name, 0) + _nbytes(ne, qt)
    n_params = sum(int(np.prod(ne)) for _, ne, _ in b.tensors)
    info = {
        "model": model, "arch": b.arch_name, "model_repo": b.cfg["repo"], "weights": weights,
        "path": str(path), "file_bytes": file_bytes, "n_tensors": len(b.tensors),
        "n_params": n_params, "tensor_types": counts, "bytes_by_type": bytes_by_type,
    }
    (out_dir / f"{model}.{weights}.json").write_text(json.dumps(info, indent=1))
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="model keys (default: all)")
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parents[2] / ".gguf"))
    ap.add_argument("--weights", default="q4_0", choices=sorted(MATRIX_TYPE))
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    if a.list:
        for k, v in MODELS.items():
            print(f"{k:20s} {v['arch']:14s} {v['repo']}")
        return
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for m in a.models or list(MODELS):
        info = write_model(m, out, a.weights)
        print(f"{m:20s} {info['arch']:14s} {info['file_bytes']/2**30:7.2f} GiB "
              f"{info['n_params']/1e9:6.2f} B params  {info['tensor_types']}  -> {info['path']}",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
