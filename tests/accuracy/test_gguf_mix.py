"""GGUF size prediction: llama.cpp's per-tensor type choice checked rule by rule, then against
published GGUF files on the Hugging Face Hub (tests/data/gguf_published_sizes.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as Q

from runlocal.errors import InputError
from runlocal.model.safetensors import hf_role
from runlocal.model.spec import AttentionSpec, LayerSpec, ModelSpec, TensorInfo
from runlocal.quant import gguf_mix as gm

DATA = Path(__file__).parents[1] / "data" / "gguf_published_sizes.json"
CATALOG = Path(__file__).parents[2] / "src" / "runlocal" / "data" / "models.json"
TOLERANCE = 0.01          # the brief: every published file within 1 %


# ------------------------------------------------------------------------------------------------
# ModelSpec from a config.json: the catalog's spec_from_config when present, else a fixture builder
# that names tensors the way transformers does (enough for the families used here).

def _fixture_spec(config: dict, id: str = "fixture") -> ModelSpec:
    c = {**config, **config.get("text_config", {})}
    mt = c.get("model_type", "")
    if mt in ("gemma3", "gemma3_text"):       # transformers' Gemma3TextConfig defaults
        c = {"vocab_size": 262_208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, **c}
        mt = "gemma3"
    h, n_layers, vocab = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    nh = c["num_attention_heads"]
    nkv = c.get("num_key_value_heads", nh)
    hd = c.get("head_dim") or h // nh
    inter = c["intermediate_size"]
    n_exp = c.get("num_experts") or c.get("num_local_experts") or 0
    fused_experts = c.get("_fused_experts", False)        # transformers 5: experts.gate_up_proj (E, 2I, H)
    tied = bool(c.get("tie_word_embeddings", mt.startswith("gemma")))
    t: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight", (vocab, h))]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        t += [(p + "input_layernorm.weight", (h,)), (p + "post_attention_layernorm.weight", (h,))]
        if mt == "phi3":
            t += [(p + "self_attn.qkv_proj.weight", ((nh + 2 * nkv) * hd, h))]
        else:
            t += [(p + "self_attn.q_proj.weight", (nh * hd, h)), (p + "self_attn.k_proj.weight", (nkv * hd, h)),
                  (p + "self_attn.v_proj.weight", (nkv * hd, h))]
            if mt == "qwen2" or c.get("attention_bias"):
                t += [(p + "self_attn.q_proj.bias", (nh * hd,)), (p + "self_attn.k_proj.bias", (nkv * hd,)),
                      (p + "self_attn.v_proj.bias", (nkv * hd,))]
        t += [(p + "self_attn.o_proj.weight", (h, nh * hd))]
        if mt == "gpt_oss":
            t += [(p + "self_attn.o_proj.bias", (h,)), (p + "self_attn.sinks", (nh,))]
        if mt in ("qwen3", "qwen3_moe", "gemma3"):
            t += [(p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (hd,))]
        if mt in ("gemma2", "gemma3"):
            t += [(p + "pre_feedforward_layernorm.weight", (h,)), (p + "post_feedforward_layernorm.weight", (h,))]
        if mt == "qwen3_moe":
            mi = c["moe_intermediate_size"]
            t += [(p + "mlp.gate.weight", (n_exp, h))]
            if fused_experts:
                t += [(p + "mlp.experts.gate_up_proj", (n_exp, 2 * mi, h)),
                      (p + "mlp.experts.down_proj", (n_exp, h, mi))]
            else:
                for e in range(n_exp):
                    t += [(p + f"mlp.experts.{e}.gate_proj.weight", (mi, h)),
                          (p + f"mlp.experts.{e}.up_proj.weight", (mi, h)),
                          (p + f"mlp.experts.{e}.down_proj.weight", (h, mi))]
        elif mt == "mixtral":
            t += [(p + "block_sparse_moe.gate.weight", (n_exp, h))]
            for e in range(n_exp):
                t += [(p + f"block_sparse_moe.experts.{e}.w1.weight", (inter, h)),
                      (p + f"block_sparse_moe.experts.{e}.w3.weight", (inter, h)),
                      (p + f"block_sparse_moe.experts.{e}.w2.weight", (h, inter))]
        elif mt == "gpt_oss":
            t += [(p + "mlp.router.weight", (n_exp, h)), (p + "mlp.router.bias", (n_exp,)),
                  (p + "mlp.experts.gate_up_proj", (n_exp, h, 2 * inter)),
                  (p + "mlp.experts.gate_up_proj_bias", (n_exp, 2 * inter)),
                  (p + "mlp.experts.down_proj", (n_exp, inter, h)), (p + "mlp.experts.down_proj_bias", (n_exp, h))]
        elif mt == "phi3":
            t += [(p + "mlp.gate_up_proj.weight", (2 * inter, h)), (p + "mlp.down_proj.weight", (h, inter))]
        else:
            t += [(p + "mlp.gate_proj.weight", (inter, h)), (p + "mlp.up_proj.weight", (inter, h)),
                  (p + "mlp.down_proj.weight", (h, inter))]
    t += [("model.norm.weight", (h,))]
    if not tied:
        t += [("lm_head.weight", (vocab, h))]
    tensors = tuple(TensorInfo(n, s, *hf_role(n)) for n, s in t)
    layers = tuple(LayerSpec(AttentionSpec("full", nkv, hd, hd), moe=bool(n_exp)) for _ in range(n_layers))
    return ModelSpec(id=id, architecture=(c.get("architectures") or [""])[0], family=mt, hidden_size=h,
                     n_layers=n_layers, n_heads=nh, vocab_size=vocab, layers=layers, tensors=tensors,
                     intermediate_size=inter, tie_word_embeddings=tied, n_experts=n_exp,
                     n_experts_active=c.get("num_experts_per_tok", 0))


def spec_from_config(config: dict, id: str) -> ModelSpec:
    try:
        from runlocal.model.hf_config import spec_from_config as real
    except ImportError:
        return _fixture_spec(config, id)
    return real(config, id=id)


def _catalog() -> dict[str, dict]:
    return {m["alias"]: m for m in json.loads(CATALOG.read_text())["models"]}


def _llama(n_layers: int = 32, hidden: int = 512, heads: int = 8, kv: int = 2, ff: int = 1024, vocab: int = 1024,
           **extra) -> ModelSpec:
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
           "num_hidden_layers": n_layers, "num_attention_heads": heads, "num_key_value_heads": kv,
           "intermediate_size": ff, "vocab_size": vocab, "tie_word_embeddings": False, **extra}
    return _fixture_spec(cfg)


def _types(spec: ModelSpec, ftype: str, **kw) -> dict[str, Q]:
    return {t.name: q for t, q in gm.choose_type(ftype, gm.gguf_tensors(spec), spec, **kw)}


# ------------------------------------------------------------------------------------------------
# published files

def _published() -> list[dict]:
    return json.loads(DATA.read_text())["files"]


def test_published_files_cover_the_brief():
    files = _published()
    assert len(files) >= 20
    ftypes = {f["ftype"] for f in files}
    assert {"Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q3_K_M", "IQ4_XS", "Q2_K"} <= ftypes
    aliases = {f["base_model_alias"] for f in files}
    assert {"qwen3-30b-a3b", "gpt-oss-20b"} <= aliases                      # two MoE families
    assert any(a.startswith("llama-3") and "70b" in a for a in aliases)     # a Llama 3.x 70B
    for f in files:
        assert f["source_url"].startswith("https://") and f["via"] and f["size_bytes"] > 0


def test_predictions_within_one_percent_of_published_files(capsys):
    catalog = _catalog()
    rows, worst = [], 0.0
    for f in _published():
        entry = catalog[f["base_model_alias"]]
        spec = spec_from_config(entry["config"], f["base_model_alias"])
        pred = gm.predict_gguf_bytes(spec, f["ftype"], imatrix=f.get("imatrix"))
        err = (pred - f["size_bytes"]) / f["size_bytes"]
        worst = max(worst, abs(err))
        rows.append((f, pred, err))
    with capsys.disabled():
        print(f"\n{'file':66s} {'ftype':9s} {'published':>16s} {'predicted':>16s} {'error':>8s}")
        for f, pred, err in rows:
            exact = "" if f["size_precision_bytes"] == 0 else f" ±{f['size_precision_bytes'] / 1e9:.3f} GB"
            print(f"{(f['repo'].split('/')[0] + '/' + f['file'])[:66]:66s} {f['ftype']:9s} "
                  f"{f['size_bytes']:>16,d} {pred:>16,d} {100 * err:+7.3f}%{exact}")
        print(f"{len(rows)} published files, worst error {100 * worst:.3f}%")
    bad = [(f["file"], f"{100 * err:+.3f}%") for f, _, err in rows if abs(err) > TOLERANCE]
    assert not bad, bad
    # exact byte counts are held tighter: a rule regression on any tensor shows up here first
    loose = [(f["file"], f"{100 * err:+.4f}%") for f, _, err in rows
             if f["size_precision_bytes"] == 0 and abs(err) > 0.001]
    assert not loose, loose


# ------------------------------------------------------------------------------------------------
# the rules, one llama.cpp decision per test

def test_q4_k_m_gives_q6_k_to_attn_v_and_ffn_down_where_use_more_bits():
    # llama-quant.cpp use_more_bits(i, n): first and last eighth, then every third layer in between
    types = _types(_llama(n_layers=32), "Q4_K_M")
    more = {i for i in range(32) if i < 4 or i >= 28 or (i - 4) % 3 == 2}
    assert 12 <= len(more) <= 16
    for i in range(32):
        want = Q.Q6_K if i in more else Q.Q4_K
        assert types[f"blk.{i}.attn_v.weight"] == want, i
        assert types[f"blk.{i}.ffn_down.weight"] == want, i
        assert types[f"blk.{i}.attn_q.weight"] == Q.Q4_K          # the rest stays at the default type
        assert types[f"blk.{i}.ffn_up.weight"] == Q.Q4_K


def test_output_weight_is_q6_k_for_k_quants():
    # output.weight: Q6_K unless the mix is already Q8_0; IQ1/IQ2/IQ3_XXS mixes use Q5_K
    spec = _llama()
    for ftype in ("Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS", "Q4_0"):
        assert _types(spec, ftype)["output.weight"] == Q.Q6_K, ftype
    assert _types(spec, "Q8_0")["output.weight"] == Q.Q8_0
    assert _types(spec, "IQ2_XXS")["output.weight"] == Q.Q5_K
    assert _types(spec, "Q4_K_M")["token_embd.weight"] == Q.Q4_K          # untied embeddings keep the default


def test_tied_embeddings_have_no_output_tensor_and_embed_takes_its_type():
    # no output.weight → llama.cpp treats token_embd as the output tensor (has_tied_embeddings)
    spec = _llama(tie_word_embeddings=True)
    names = [t.name for t in gm.gguf_tensors(spec)]
    assert "output.weight" not in names and "token_embd.weight" in names
    assert _types(spec, "Q4_K_M")["token_embd.weight"] == Q.Q6_K


def test_row_length_not_divisible_by_256_falls_back():
    # tensor_type_fallback: Q4_K→Q5_0, Q5_K→Q5_1, Q6_K→Q8_0, Q2_K/Q3_K→Q4_0, IQ*→IQ4_NL (blocks of 32)
    spec = _llama(n_layers=8, hidden=320, heads=5, kv=1, ff=768)         # 320 % 256 = 64, 320 % 32 = 0
    q4 = _types(spec, "Q4_K_M")
    assert q4["blk.0.attn_q.weight"] == Q.Q5_0
    assert q4["blk.0.attn_v.weight"] == Q.Q8_0                             # Q6_K (use_more_bits) → Q8_0
    assert q4["blk.0.ffn_down.weight"] == Q.Q6_K                           # its rows are 768 = 3 × 256: no fallback
    assert _types(spec, "Q5_K_S")["blk.3.attn_output.weight"] == Q.Q5_1
    assert _types(spec, "Q3_K_S")["blk.3.ffn_gate.weight"] == Q.Q4_0
    assert _types(spec, "IQ4_XS")["blk.3.ffn_up.weight"] == Q.IQ4_NL
    assert _types(spec, "Q4_K_M")["output.weight"] == Q.Q8_0               # output: Q8_0 when the block does not fit


def test_row_length_not_divisible_by_32_falls_back_to_f16():
    spec = _llama(n_layers=2, hidden=100, heads=4, kv=4, ff=256)
    assert _types(spec, "Q4_K_M")["blk.0.attn_q.weight"] == Q.F16          # "must use F16 due to unusual shape"


def test_norms_biases_and_routers_stay_f32():
    # 1-D tensors, *_norm.weight, biases and ffn_gate_inp are F32 in the converter and never quantized
    spec = _fixture_spec(_catalog()["gpt-oss-20b"]["config"])
    types = _types(spec, "Q4_K_M")
    for name in ("blk.0.attn_norm.weight", "output_norm.weight", "blk.0.attn_q.bias", "blk.0.ffn_gate_inp.weight",
                 "blk.0.attn_sinks.weight", "blk.0.ffn_down_exps.bias"):
        assert types[name] == Q.F32, name
    assert all(q == Q.F32 for n, q in types.items() if n.endswith("_norm.weight"))


def test_moe_experts_are_merged_into_3d_tensors():
    # convert_hf_to_gguf merges experts.{e}.*_proj into ffn_*_exps (n_expert, rows, row length)
    cfg = {**_catalog()["qwen3-30b-a3b"]["config"], "num_hidden_layers": 2}
    tensors = {t.name: t for t in gm.gguf_tensors(_fixture_spec(cfg))}
    assert tensors["blk.1.ffn_gate_exps.weight"].shape == (128, 768, 2048)
    assert tensors["blk.1.ffn_up_exps.weight"].shape == (128, 768, 2048)
    assert tensors["blk.1.ffn_down_exps.weight"].shape == (128, 2048, 768)
    assert tensors["blk.1.ffn_gate_exps.weight"].role == "expert_gate"
    assert tensors["blk.1.ffn_gate_inp.weight"].dtype == "F32"
    assert not any(".experts." in n for n in tensors)


def test_fused_gate_up_experts_are_split_like_per_expert_ones():
    # transformers 5 stores experts fused (experts.gate_up_proj); the GGUF is the same
    cfg = {**_catalog()["qwen3-30b-a3b"]["config"], "num_hidden_layers": 2}
    per_expert = [(t.name, t.shape) for t in gm.gguf_tensors(_fixture_spec(cfg))]
    fused = [(t.name, t.shape) for t in gm.gguf_tensors(_fixture_spec({**cfg, "_fused_experts": True}))]
    assert sorted(per_expert) == sorted(fused)


def test_eight_expert_models_bump_attention():
    # n_expert == 8 (Mixtral): attn_v and attn_k → Q8_0, attn_output → Q5_K in Q4_K_M
    cfg = {**_catalog()["mixtral-8x7b"]["config"], "num_hidden_layers": 4}
    types = _types(_fixture_spec(cfg), "Q4_K_M")
    assert types["blk.2.attn_v.weight"] == Q.Q8_0
    assert types["blk.2.attn_k.weight"] == Q.Q8_0
    assert types["blk.2.attn_output.weight"] == Q.Q5_K
    assert types["blk.2.ffn_gate_exps.weight"] == Q.Q4_K


def test_70b_attn_v_gets_q5_k_instead_of_q4_k():
    # LLM_TYPE_70B (llama, 80 layers, GQA): attn_v Q3_K/Q4_K → Q5_K
    types = _types(_llama(n_layers=80, hidden=256, heads=8, kv=1, ff=512), "Q4_K_M")
    assert {types[f"blk.{i}.attn_v.weight"] for i in range(80)} == {Q.Q5_K, Q.Q6_K}
    other = _types(_llama(n_layers=79, hidden=256, heads=8, kv=1, ff=512), "Q4_K_M")      # not LLM_TYPE_70B
    assert {other[f"blk.{i}.attn_v.weight"] for i in range(79)} == {Q.Q4_K, Q.Q6_K}


def test_mxfp4_moe_quantizes_experts_to_mxfp4_and_the_rest_to_q8_0():
    cfg = {**_catalog()["gpt-oss-20b"]["config"], "num_hidden_layers": 2}
    types = _types(_fixture_spec(cfg), "MXFP4_MOE")
    assert types["blk.0.ffn_up_exps.weight"] == Q.MXFP4
    assert types["blk.0.attn_q.weight"] == Q.Q8_0
    assert types["output.weight"] == types["token_embd.weight"] == Q.Q8_0


def test_fused_qkv_rule_follows_the_release_that_made_the_files():
    # before the tensor_category refactor attn_qkv had its own branch (Q5_K in Q4_K_M); 007dbbf3 sends it
    # through the attn_v rules instead
    spec = _fixture_spec({**_catalog()["phi-3-mini"]["config"], "num_hidden_layers": 8})
    assert {q for n, q in _types(spec, "Q4_K_M").items() if "attn_qkv" in n} == {Q.Q5_K}
    latest = {q for n, q in _types(spec, "Q4_K_M", fused_qkv_as_v=True).items() if "attn_qkv" in n}
    assert latest == {Q.Q4_K, Q.Q6_K}


def test_imatrix_changes_only_the_documented_choices():
    spec = _llama(n_layers=16)
    assert _types(spec, "Q4_0", imatrix=True)["blk.0.ffn_down.weight"] == Q.Q4_1
    assert _types(spec, "Q4_0", imatrix=False)["blk.0.ffn_down.weight"] == Q.Q4_0
    assert _types(spec, "IQ4_XS", imatrix=False)["blk.0.ffn_down.weight"] == Q.Q5_K
    assert _types(spec, "IQ4_XS", imatrix=True)["blk.0.ffn_down.weight"] == Q.IQ4_XS


# ------------------------------------------------------------------------------------------------
# API

def test_every_supported_ftype_predicts_and_sizes_are_ordered():
    for name in ("Q4_K_M", "Q8_0", "IQ4_XS", "F16", "BF16", "Q2_K", "Q3_K_S", "Q5_K_M", "Q6_K", "MXFP4_MOE",
                 "IQ2_XXS", "IQ1_S", "IQ3_M", "TQ1_0", "F32"):
        assert name in gm.SUPPORTED_FTYPES
    spec = _llama(n_layers=8)
    sizes = {ft: gm.predict_gguf_bytes(spec, ft, include_metadata=False) for ft in gm.SUPPORTED_FTYPES}
    assert all(v > 0 and v % 32 == 0 for v in sizes.values())
    ladder = ["Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16", "F32"]
    assert [sizes[f] for f in ladder] == sorted(sizes[f] for f in ladder)
    assert sizes["F16"] == sizes["BF16"]


def test_ftype_names_are_normalized():
    assert gm.normalize_ftype("q4_k_m") == "Q4_K_M"
    assert gm.normalize_ftype("MOSTLY_Q8_0") == "Q8_0"
    assert gm.normalize_ftype("Q4_K") == "Q4_K_M"
    assert gm.normalize_ftype("all_f32") == "F32"
    with pytest.raises(InputError):
        gm.normalize_ftype("Q7_K")


def test_bytes_by_type_add_up_and_metadata_is_counted():
    spec = _llama(n_layers=8, vocab=32000)
    by_type = gm.weight_bytes_by_type(spec, "Q4_K_M")
    assert set(by_type) == {"Q4_K", "Q6_K", "F32"}
    data = gm.predict_gguf_bytes(spec, "Q4_K_M", include_metadata=False)
    assert sum(by_type.values()) <= data < sum(by_type.values()) + 32 * len(spec.tensors)
    header = gm.predict_gguf_bytes(spec, "Q4_K_M") - data
    assert 32000 * 15 < header < 32000 * 40                       # the vocabulary dominates the header


def test_a_spec_read_from_a_gguf_file_passes_through(tmp_path):
    from factories import write_llama_gguf

    from runlocal.model.gguf import read_gguf

    spec = read_gguf(write_llama_gguf(tmp_path / "m.gguf", n_layers=2, hidden=256, heads=8, kv_heads=2, ff=512,
                                      vocab=1000))
    tensors = gm.gguf_tensors(spec)
    assert [t.name for t in tensors] == [t.name for t in spec.tensors]
    assert {t.dtype for t in tensors if "norm" in t.name} == {"F32"}
    types = _types(spec, "Q4_K_M")
    assert types["blk.0.attn_v.weight"] == Q.Q4_K and types["blk.1.attn_v.weight"] == Q.Q6_K   # use_more_bits(i, 2)


def test_vision_towers_are_left_to_the_mmproj_file():
    spec = _llama(n_layers=2)
    vis = TensorInfo("vision_tower.blocks.0.attn.qkv.weight", (768, 256), "vision")
    spec2 = ModelSpec(**{**spec.__dict__, "tensors": spec.tensors + (vis,)})
    assert gm.predict_gguf_bytes(spec2, "Q8_0") == gm.predict_gguf_bytes(spec, "Q8_0")


def test_gpt_oss_experts_stay_mxfp4_in_the_converters_own_outtypes():
    # conversion/gpt_oss.py GptOssModel.repack_mxfp4 writes the checkpoint's MXFP4 experts with
    # raw_dtype=MXFP4 whatever --outtype asks, so an F16/BF16 gpt-oss GGUF is MXFP4 experts + 16-bit rest.
    # A maintainer's convert log (danbev/learning-ai, notes/llama.cpp/gpt-oss.md):
    #   convert_hf_to_gguf.py gpt-oss-20b --outtype bf16 → "n_tensors = 459, total_size = 13.8G"
    from runlocal.model.catalog import lookup

    small = lookup("gpt-oss-20b")
    assert len(gm.gguf_tensors(small)) == 459
    assert abs(gm.predict_gguf_bytes(small, "BF16", include_metadata=False) - 13.8e9) <= 0.05e9
    assert set(gm.weight_bytes_by_type(small, "F16")) == {"MXFP4", "F16", "F32"}
    # the 120B file one post ran on two RTX 3090s (llmgarage.ai/gpt-oss-120b-dual-3090): "File Size (F16) ~65 GB"
    assert abs(sum(gm.weight_bytes_by_type(lookup("gpt-oss-120b"), "F16").values()) - 65e9) <= 0.5e9
    # a quantized ftype dequantizes the MXFP4 experts and quantizes them again (llama-quant.cpp,
    # llama_tensor_dequantize_impl): none stay MXFP4 under Q4_K_M; MXFP4_MOE makes them MXFP4 itself
    assert "MXFP4" not in gm.weight_bytes_by_type(small, "Q4_K_M")
    assert "MXFP4" in gm.weight_bytes_by_type(small, "MXFP4_MOE")
