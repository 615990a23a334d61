"""DeepSeek-V2/V3, R1 and Kimi K2 (GGUF arch deepseek2, MLA) as convert_hf_to_gguf.py + llama-quantize write them.

The current converter (conversion/deepseek.py, DeepseekV2Model.modify_tensors: "MLA with the absorption
optimization") never writes the fused attn_kv_b: kv_b_proj, viewed (n_head_kv, nope + v, kv_lora), is split into
attn_k_b (the K part transposed: ggml ne [nope, kv_lora, n_head]) and attn_v_b (ne [kv_lora, v, n_head]), the shapes
src/models/deepseek2.cpp loads. llama-quantize (src/llama-quant.cpp) files both under tensor_category::OTHER, so they
take the ftype's default type, and attn_k_b's 128-element rows fall back from 256-blocks (tensor_type_fallback).

The expected figures here are worked out from each model's config.json by hand, from the zero-weight GGUF that
runlocal.evidence.zero_gguf builds independently (the file llama.cpp loaded for the measured records),
and from llama.cpp's logged model buffers.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from gguf import GGML_QUANT_SIZES
from gguf import GGMLQuantizationType as Q

from runlocal.model.catalog import lookup
from runlocal.quant import gguf_mix as gm
from runlocal.runtimes import ggml_graph

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20


def _config(alias: str) -> dict:
    models = json.loads((ROOT / "src" / "runlocal" / "data" / "models.json").read_text())["models"]
    return next(m for m in models if m["alias"] == alias)["config"]


def _bytes(n_elements: int, q: Q) -> int:
    block, size = GGML_QUANT_SIZES[q]
    return n_elements // block * size


@pytest.mark.parametrize("alias", ["deepseek-v3", "deepseek-r1", "kimi-k2", "deepseek-v2-lite"])
def test_the_view_splits_kv_b_into_k_b_and_v_b_and_the_graph_is_simulated(alias):
    c = _config(alias)
    nh, kv_lora = c["num_attention_heads"], c["kv_lora_rank"]
    nope, vd, n_layer = c["qk_nope_head_dim"], c["v_head_dim"], c["num_hidden_layers"]
    assert c.get("num_key_value_heads", nh) == nh      # the converter splits per num_key_value_heads
    view = gm.gguf_view(lookup(alias), "Q4_K_M")
    assert view is not None and view.family == "deepseek2"
    shapes = {t.name: t.shape for t in view.tensors}
    assert not any("attn_kv_b" in n for n in shapes)
    for il in range(n_layer):
        # runlocal keeps PyTorch order (outermost first): ggml ne is the reverse
        assert tuple(reversed(shapes[f"blk.{il}.attn_k_b.weight"])) == (nope, kv_lora, nh)
        assert tuple(reversed(shapes[f"blk.{il}.attn_v_b.weight"])) == (kv_lora, vd, nh)
    assert ggml_graph.supported(view)


@pytest.mark.parametrize("alias", ["deepseek-v3", "kimi-k2"])
def test_v3_routers_carry_the_expert_selection_bias(alias):
    # e_score_correction_bias (noaux_tc top-k; a transformers buffer, so not in the config-built spec) is written
    # as blk.N.exp_probs_b.bias, F32 [n_routed_experts], in every MoE layer; DeepSeek-V2 has none
    c = _config(alias)
    view = gm.gguf_view(lookup(alias), "Q4_K_M")
    bias = {t.name: t for t in view.tensors if "exp_probs_b" in t.name}
    moe_layers = range(c["first_k_dense_replace"], c["num_hidden_layers"])
    assert set(bias) == {f"blk.{il}.exp_probs_b.bias" for il in moe_layers}
    assert {(t.shape, t.dtype) for t in bias.values()} == {((c["n_routed_experts"],), "F32")}
    lite = gm.gguf_view(lookup("deepseek-v2-lite"), "Q4_K_M")
    assert not any("exp_probs_b" in t.name for t in lite.tensors)


# llama-quantize on attn_k_b (rows of qk_nope_head_dim = 128) and attn_v_b (rows of kv_lora_rank = 512):
# category OTHER, so the ftype's default type (llama_ftype_get_default_type), with tensor_type_fallback for the
# 256-block types on the 128-element rows; MXFP4_MOE gives every tensor with ne[2] > 1 MXFP4 (not only experts)
_K_B_V_B = {
    "Q4_K_M": (Q.Q5_0, Q.Q4_K), "Q4_K_S": (Q.Q5_0, Q.Q4_K), "Q5_K_M": (Q.Q5_1, Q.Q5_K), "Q6_K": (Q.Q8_0, Q.Q6_K),
    "Q3_K_M": (Q.Q4_0, Q.Q3_K), "Q2_K": (Q.Q4_0, Q.Q2_K), "IQ2_XXS": (Q.IQ4_NL, Q.IQ2_XXS),
    "IQ1_S": (Q.IQ4_NL, Q.IQ1_S), "IQ4_XS": (Q.IQ4_NL, Q.IQ4_XS), "IQ4_NL": (Q.IQ4_NL, Q.IQ4_NL),
    "Q4_0": (Q.Q4_0, Q.Q4_0), "Q8_0": (Q.Q8_0, Q.Q8_0), "MXFP4_MOE": (Q.MXFP4, Q.MXFP4),
    "F16": (Q.F16, Q.F16), "BF16": (Q.BF16, Q.BF16),
}


@pytest.mark.parametrize("ftype", sorted(_K_B_V_B))
def test_k_b_and_v_b_types_follow_llama_quantize(ftype):
    spec = lookup("deepseek-v3")
    types = {t.name: q for t, q in gm.choose_type(ftype, gm.gguf_tensors(spec), spec)}
    k_b, v_b = _K_B_V_B[ftype]
    for il in range(spec.n_layers):
        assert (types[f"blk.{il}.attn_k_b.weight"], types[f"blk.{il}.attn_v_b.weight"]) == (k_b, v_b), il


def test_deepseek_v3_q4_k_m_mla_bytes_by_hand():
    # 61 layers × 128 heads × (512 × 128) elements in each of k_b (Q5_0) and v_b (Q4_K); the exp_probs_b biases
    # add 58 × 256 F32; nothing else in the mix is Q5_0
    by_type = gm.weight_bytes_by_type(lookup("deepseek-v3"), "Q4_K_M")
    per_layer = 128 * 512 * 128
    assert by_type["Q5_0"] == 61 * _bytes(per_layer, Q.Q5_0) == 351_797_248
    # F32: per layer attn_norm, ffn_norm (7168), q_a_norm (1536), kv_a_norm (512); output_norm; 58 routers
    # (256 × 7168) and 58 exp_probs_b (256)
    f32 = 61 * (2 * 7168 + 1536 + 512) + 7168 + 58 * 256 * 7168 + 58 * 256
    assert by_type["F32"] == 4 * f32
    from runlocal.quant import gguf_table  # the shipped table (what `runlocal check` reads) is regenerated
    assert gguf_table.catalog_weights(lookup("deepseek-v3"), "Q4_K_M") == by_type


def _zero_gguf_spec(tmp_path, model: str, weights: str):
    from runlocal.evidence.zero_gguf import write_model
    from runlocal.model.gguf import read_gguf

    logging.getLogger("gguf").setLevel(logging.ERROR)
    return read_gguf(write_model(model, tmp_path, weights)["path"])


def test_deepseek_v2_lite_view_is_the_measured_file_and_its_model_buffer(tmp_path):
    # zero_gguf.py lists the tensors by hand from DeepSeek-V2-Lite's config.json (attn_k_b [nope, kv_lora,
    # n_head], attn_v_b [kv_lora, v, n_head], Q4_0 matrices, Q6_K output, F32 norms/routers); the catalog model
    # viewed as llama-quantize's Q4_0 must be that file, tensor for tensor
    measured = _zero_gguf_spec(tmp_path, "deepseek-v2-lite", "q4_0")
    view = gm.gguf_view(lookup("deepseek-v2-lite"), "Q4_0")
    assert {t.name: (t.shape, t.dtype) for t in view.tensors} == {t.name: (t.shape, t.dtype) for t in measured.tensors}
    # llama.cpp (vendored 0c1e5709, CPU, mmap) logged its whole model buffer: the padded tensor data
    rec = next(json.loads(line) for line in (ROOT / "measurements" / "llamacpp" / "data" / "cpu.jsonl").open()
               if '"deepseek-v2-lite"' in line)
    logged = rec["model_buffers"]["CPU_Mapped model"]
    assert rec["weight_tensor_types"] == {"Q4_0": 295, "F32": 108, "Q6_K": 1}
    assert f"{sum(gm.pad_to_alignment(t.nbytes) for t in view.tensors) / MiB:.2f}" == f"{logged:.2f}"


def test_ollama_deepseek_v3_log_with_a_legacy_kv_b_reproduces_the_rest_of_the_mix():
    # ollama/ollama#8447 (Jan 2025): a DeepSeek-V3 Q4_K_M blob from before the k_b/v_b split, 3 of 61 layers on
    # CUDA0. Put the fused attn_kv_b of that era back by hand (n_head·(nope + v) rows of kv_lora: Q4_K, the
    # default type then) in place of k_b/v_b and the view's other tensors give both logged buffers to the printed
    # digit. The exp_probs_b biases are needed for that (3 KiB on the GPU: 21320.00 without them).
    rec = next(json.loads(line) for line in (ROOT / "measurements" / "public_logs" / "llamacpp.jsonl").open()
               if "ollama/ollama/issues/8447" in line)
    assert rec["settings"]["offloaded"] == "3/62 layers"
    c = _config("deepseek-v3")
    nh, kv_lora, nope, vd = c["num_attention_heads"], c["kv_lora_rank"], c["qk_nope_head_dim"], c["v_head_dim"]
    kv_b = gm.pad_to_alignment(_bytes(nh * (nope + vd) * kv_lora, Q.Q4_K))
    per_layer: dict[object, int] = {}
    for t in gm.gguf_view(lookup("deepseek-v3"), "Q4_K_M").tensors:
        key = t.layer if t.name.startswith("blk.") else t.name
        if "attn_k_b" in t.name:
            per_layer[key] = per_layer.get(key, 0) + kv_b
        elif "attn_v_b" not in t.name:
            per_layer[key] = per_layer.get(key, 0) + gm.pad_to_alignment(t.nbytes)
    n = c["num_hidden_layers"]
    gpu = sum(per_layer[il] for il in range(n - 3, n))          # -ngl 3: the last three blocks, not the output
    cpu = sum(per_layer.values()) - gpu
    logged = rec["logged"]["model_buffers"]
    assert (f"{gpu / MiB:.2f}", f"{cpu / MiB:.2f}") == (f"{logged['CUDA0']:.2f}", f"{logged['CPU_Mapped']:.2f}")


def test_override_tensor_patterns_see_the_split_names():
    # -ot patterns match the file's names: a catalog model's kv_b_proj answers to attn_k_b and attn_v_b
    from runlocal.model.spec import split_in_gguf

    spec = lookup("deepseek-v3")
    names = dict(zip((t.name for t in spec.tensors), gm.gguf_names(spec)))
    assert names["model.layers.7.self_attn.kv_b_proj.weight"] == ("blk.7.attn_k_b.weight", "blk.7.attn_v_b.weight")
    kv_b = next(t for t in spec.tensors if t.name.endswith("kv_b_proj.weight"))
    assert split_in_gguf(kv_b) == 2
    all_names = {n for ns in gm.gguf_names(spec) for n in ns}
    assert all_names - {t.name for t in gm.gguf_view(spec, "Q4_K_M").tensors} == set()
