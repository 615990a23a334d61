"""NVIDIA ModelOpt checkpoints keep their quantization in hf_quant_config.json, not config.json: a user asking
about nvidia/Llama-3.1-70B-Instruct-FP8 must get the FP8 checkpoint planned (about 70 GB), not BF16 (141 GB).

Expected figures come from the published architecture and NVIDIA's description of the checkpoint, and from
safetensors files written in the layout vLLM's modelopt.py loads — not from the planner's own formula."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from asking import run_cli

from runlocal.errors import ModelFormatError
from runlocal.model.catalog import find_entry
from runlocal.model.resolve import resolve_model
from runlocal.weights import estimate

# meta-llama/Llama-3.1-70B-Instruct config.json (the same architecture NVIDIA quantized)
H, FFN, LAYERS, HEADS, KV_HEADS, VOCAB = 8192, 28672, 80, 64, 8, 128256
HEAD_DIM = H // HEADS
# NVIDIA's FP8 Llama-3.1 cards: "Only the weights and activations of the linear operators within transformers blocks
# are quantized ... reducing the disk size and GPU memory requirements by approximately 50%" — so the linear weights
# of the 80 blocks are 1 byte, embeddings, LM head and norms stay BF16 (2 bytes); scales are a few bytes per tensor.
BLOCK_LINEAR = LAYERS * (H * H * 2 + 2 * H * KV_HEADS * HEAD_DIM + 3 * H * FFN)
BF16_REST = 2 * (2 * VOCAB * H + (2 * LAYERS + 1) * H)
PUBLISHED_FP8_BYTES = BLOCK_LINEAR + BF16_REST       # 72.65 GB; the BF16 repo is 141.1 GB


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args)


def test_check_70b_fp8_on_h100_plans_the_fp8_checkpoint():
    # the user's question, as typed
    run = _cli("check", "llama-3.1-70b-fp8", "--runtime", "vllm", "--gpu", "h100", "--json")
    assert run.returncode in (0, 1), run.stderr
    plan = json.loads(run.stdout)
    weights = plan["model"]["weights_bytes"]
    assert abs(weights - PUBLISHED_FP8_BYTES) < 1e-4 * PUBLISHED_FP8_BYTES     # scales: 8 bytes per Linear
    assert 69e9 < weights < 74e9, weights                                       # "~70 GB", not 141 GB
    assert "fp8" in plan["settings"]["quant"].lower()
    assert plan["command"].startswith("vllm serve nvidia/Llama-3.1-70B-Instruct-FP8")


def test_fp8_is_about_half_of_the_bf16_checkpoint():
    fp8 = estimate(resolve_model("llama-3.1-70b-fp8"), None).total
    bf16 = estimate(resolve_model("llama-3.1-70b"), None).total
    assert 0.50 < fp8 / bf16 < 0.53     # "approximately 50%"; embeddings and LM head stay 16-bit


def _write_folder(folder: Path, config: dict, quant: dict | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    if quant is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(quant))
    return folder


def test_local_folder_with_hf_quant_config_is_read_as_the_catalog(tmp_path):
    entry = find_entry("llama-3.1-70b-fp8")
    assert entry is not None
    folder = _write_folder(tmp_path / "Llama-3.1-70B-Instruct-FP8", entry["config"], entry["hf_quant_config"])
    local = estimate(resolve_model(str(folder)), None)
    assert local.total == estimate(resolve_model("llama-3.1-70b-fp8"), None).total
    # the same folder without hf_quant_config.json is the BF16 model (config.json says bfloat16)
    (folder / "hf_quant_config.json").unlink()
    assert estimate(resolve_model(str(folder)), None).total > 1.9 * local.total


TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
        "max_position_embeddings": 2048, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
LINEARS = {"self_attn.q_proj": (64, 64), "self_attn.k_proj": (32, 64), "self_attn.v_proj": (32, 64),
           "self_attn.o_proj": (64, 64), "mlp.gate_proj": (128, 64), "mlp.up_proj": (128, 64),
           "mlp.down_proj": (64, 128)}


def _modelopt_tensors(algo: str) -> dict:
    """The tensors a ModelOpt export stores, per vLLM's loaders (modelopt.py ModelOptFp8LinearMethod /
    ModelOptNvFp4LinearMethod.create_weights), written with the safetensors library."""
    torch = pytest.importorskip("torch")
    bf16 = torch.bfloat16
    t = {"model.embed_tokens.weight": torch.zeros(256, 64, dtype=bf16), "model.norm.weight": torch.zeros(64, dtype=bf16),
         "lm_head.weight": torch.zeros(256, 64, dtype=bf16)}
    for i in range(2):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = torch.zeros(64, dtype=bf16)
        t[p + "post_attention_layernorm.weight"] = torch.zeros(64, dtype=bf16)
        for name, (out, inp) in LINEARS.items():
            m = p + name
            t[m + ".input_scale"] = torch.zeros((), dtype=torch.float32)
            if algo == "FP8":
                t[m + ".weight"] = torch.zeros(out, inp, dtype=torch.float8_e4m3fn)
                t[m + ".weight_scale"] = torch.zeros((), dtype=torch.float32)
            else:   # NVFP4: two e2m1 per byte, an e4m3 scale per 16 inputs, an f32 global scale
                t[m + ".weight"] = torch.zeros(out, inp // 2, dtype=torch.uint8)
                t[m + ".weight_scale"] = torch.zeros(out, inp // 16, dtype=torch.float8_e4m3fn)
                t[m + ".weight_scale_2"] = torch.zeros((), dtype=torch.float32)
    return t


@pytest.mark.parametrize("algo", ["FP8", "NVFP4"])
def test_safetensors_headers_and_hf_quant_config_alone_agree(tmp_path, algo):
    from safetensors.torch import save_file

    quant = {"producer": {"name": "modelopt", "version": "0.29.0"},
             "quantization": {"quant_algo": algo, "kv_cache_quant_algo": None, "exclude_modules": ["lm_head"]}}
    with_files = _write_folder(tmp_path / "stored", TINY, quant)
    save_file(_modelopt_tensors(algo), str(with_files / "model.safetensors"))
    config_only = _write_folder(tmp_path / "config-only", TINY, quant)
    stored = estimate(resolve_model(str(with_files)), None)
    assert stored.from_file
    assert estimate(resolve_model(str(config_only)), None).total == stored.total


def test_hf_quant_config_without_producer_is_still_modelopt():
    from runlocal.model.hf_config import spec_from_config

    quant = {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "auto", "group_size": 16}}
    spec = spec_from_config(TINY, id="tiny", quant_config=quant)
    assert (spec.file_quant, spec.kv_cache_quant) == ("modelopt-nvfp4", None)


def test_kv_cache_quant_algo_is_read():
    quant = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}}
    from runlocal.model.hf_config import spec_from_config

    spec = spec_from_config(TINY, id="tiny", quant_config=quant)
    assert (spec.file_quant, spec.kv_cache_quant) == ("modelopt-nvfp4", "fp8")


def test_hub_repo_reads_hf_quant_config_from_the_cache(tmp_path, monkeypatch):
    entry = find_entry("llama-3.1-70b-fp8")
    assert entry is not None
    snap = tmp_path / "models--nvidia--Llama-3.1-70B-Instruct-FP8"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (snap / "refs").mkdir(parents=True)
    (snap / "refs" / "main").write_text(commit)
    files = snap / "snapshots" / commit
    files.mkdir(parents=True)
    (files / "config.json").write_text(json.dumps(entry["config"]))
    (files / "hf_quant_config.json").write_text(json.dumps(entry["hf_quant_config"]))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    from runlocal.model.hub import read_hub_model

    spec = read_hub_model("nvidia/Llama-3.1-70B-Instruct-FP8")
    assert spec.file_quant == "modelopt-fp8"
    assert estimate(spec, None).total == estimate(resolve_model("llama-3.1-70b-fp8"), None).total


@pytest.mark.parametrize("quant, field", [
    ("x" * (5 << 20), "hf_quant_config.json is larger than 4 MiB"),
    (json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "W4A8_AWQ"}}), "quant_algo 'W4A8_AWQ'"),
    (json.dumps({"producer": {"name": "modelopt"}, "quantization": "FP8"}), "'quantization'"),
    (json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "exclude_modules": "lm_head"}}),
     "exclude_modules"),
    ("[" * 100_000, "hf_quant_config.json"),
], ids=["5MiB", "W4A8_AWQ", "quantization-string", "exclude-string", "nested-100k"])
def test_hostile_hf_quant_config_is_one_clear_line(tmp_path, quant, field):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    (folder / "hf_quant_config.json").write_text(quant)
    with pytest.raises(ModelFormatError) as err:
        resolve_model(str(folder))
    assert field in str(err.value) and "\n" not in str(err.value)
    run = _cli("check", str(folder), "--runtime", "vllm", "--gpu", "h100")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert field in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_vllm_auto_kv_dtype_follows_the_checkpoints_kv_cache_quant_algo(tmp_path):
    # an NVFP4 export with FP8 KV scales: vLLM's --kv-cache-dtype auto becomes fp8, so a token's KV is half
    quant = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
                                                                 "exclude_modules": ["lm_head"]}}
    entry = find_entry("llama-3.1-70b-fp8")
    assert entry is not None
    with_kv = _write_folder(tmp_path / "kv", entry["config"], quant)
    without = _write_folder(tmp_path / "plain", entry["config"], {**quant, "quantization": {"quant_algo": "NVFP4"}})
    plans = []
    for folder in (with_kv, without):
        run = _cli("check", str(folder), "--runtime", "vllm", "--gpu", "h100", "--ctx", "8192", "--json")
        assert run.returncode in (0, 1), run.stderr
        plans.append(json.loads(run.stdout))
    # Llama 3.1 70B: 80 layers × 8 KV heads × 128 × (K + V) = 327,680 bytes a token at 16 bit
    assert plans[1]["kv_bytes_per_token"] == 80 * 8 * 128 * 2 * 2
    assert plans[0]["kv_bytes_per_token"] == 80 * 8 * 128 * 2 * 1
    assert "--kv-cache-dtype fp8" in plans[0]["command"]
    # NVFP4: 4 bits a weight + an fp8 scale per 16 (4.5 bits) in the blocks' Linears; embeddings, LM head and norms
    # 16-bit — 42.7 GB = 39.8 GiB, as llm-compressor's NVFP4 Llama-3.1-70B with lm_head kept is published ("~40GB",
    # huggingface.co/JongYeop/Llama-3.1-70B-Instruct-NVFP4-W4A4)
    expected = BLOCK_LINEAR * 9 // 16 + BF16_REST
    assert abs(plans[0]["model"]["weights_bytes"] - expected) < 1e-4 * expected


def test_transformers_loads_a_modelopt_checkpoint_as_16_bit():
    # transformers reads no hf_quant_config.json: the same repo is the BF16 model's bytes there, and the plan says why
    run = _cli("check", "llama-3.1-70b-fp8", "--runtime", "transformers", "--gpu", "h100", "--json")
    assert run.returncode in (0, 1), run.stderr
    plan = json.loads(run.stdout)
    assert plan["model"]["weights_bytes"] > 1.9 * PUBLISHED_FP8_BYTES
    assert any("hf_quant_config.json" in step["formula"] for step in plan["explain"])
