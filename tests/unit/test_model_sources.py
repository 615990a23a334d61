"""Every MODEL form resolves to one ModelSpec: a folder with safetensors headers, a config.json,
a Hub repo id (through huggingface_hub's cache, offline), a catalog alias."""

import json

import pytest

pytest.importorskip("runlocal.model.hf_config", reason="HF config reader not landed yet")
from factories import safetensors_bytes

from runlocal.errors import ModelFormatError, ModelNotFoundError, RemoteError, UnknownModelError
from runlocal.model.resolve import resolve_model

TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
    "max_position_embeddings": 2048, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def tiny_tensors(dtype="BF16"):
    t = {"model.embed_tokens.weight": (dtype, [100, 64]), "lm_head.weight": (dtype, [100, 64]),
         "model.norm.weight": (dtype, [64])}
    for i in range(2):
        p = f"model.layers.{i}."
        t |= {p + "self_attn.q_proj.weight": (dtype, [64, 64]), p + "self_attn.k_proj.weight": (dtype, [32, 64]),
              p + "self_attn.v_proj.weight": (dtype, [32, 64]), p + "self_attn.o_proj.weight": (dtype, [64, 64]),
              p + "mlp.gate_proj.weight": (dtype, [128, 64]), p + "mlp.up_proj.weight": (dtype, [128, 64]),
              p + "mlp.down_proj.weight": (dtype, [64, 128]), p + "input_layernorm.weight": (dtype, [64]),
              p + "post_attention_layernorm.weight": (dtype, [64])}
    return t


@pytest.fixture
def model_dir(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY_LLAMA))
    tensors = tiny_tensors()
    names = sorted(tensors)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    for file, keys in shards.items():
        (tmp_path / file).write_bytes(safetensors_bytes({k: tensors[k] for k in keys}))
    index = {"weight_map": {k: f for f, ks in shards.items() for k in ks}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    return tmp_path


def test_folder_reads_every_shard_header(model_dir):
    spec = resolve_model(str(model_dir))
    expected = sum(2 * __import__("math").prod(shape) for _, shape in tiny_tensors().values())
    assert spec.file_bytes == expected
    assert spec.params == expected // 2
    assert spec.layers[0].attention.n_kv_heads == 2


def test_config_json_path_alone(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY_LLAMA))
    spec = resolve_model(str(tmp_path / "config.json"))
    # no weights on disk: the count comes from the config alone and equals the file-based one
    assert spec.params == sum(__import__("math").prod(s) for _, s in tiny_tensors().values())
    assert spec.file_bytes is None


def test_config_missing_field_named(tmp_path):
    bad = dict(TINY_LLAMA)
    del bad["num_hidden_layers"]
    (tmp_path / "config.json").write_text(json.dumps(bad))
    with pytest.raises(ModelFormatError, match="num_hidden_layers"):
        resolve_model(str(tmp_path / "config.json"))


def test_config_not_json(tmp_path):
    (tmp_path / "config.json").write_text("{nope")
    with pytest.raises(ModelFormatError, match="JSON"):
        resolve_model(str(tmp_path / "config.json"))


def _fake_hub_cache(root, repo_id, files):
    folder = root / ("models--" + repo_id.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    for name, text in files.items():
        (snap / name).write_text(text)


def test_hub_repo_from_cache_offline(tmp_path, monkeypatch):
    # huggingface_hub's own cache layout, HF_HUB_OFFLINE=1: read without touching the network
    _fake_hub_cache(tmp_path, "someone/tiny-llama", {"config.json": json.dumps(TINY_LLAMA)})
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    spec = resolve_model("someone/tiny-llama")
    assert spec.repo_id == "someone/tiny-llama" and spec.n_layers == 2


def test_hub_repo_not_cached_offline(tmp_path, monkeypatch):
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    with pytest.raises((RemoteError, ModelNotFoundError), match="someone/absent"):
        resolve_model("someone/absent")


def test_alias_and_repo_id_resolve_offline():
    a = resolve_model("llama-3.1-8b")
    assert a.layers[0].attention.n_kv_heads == 8 and a.n_layers == 32


def test_unknown_alias_suggests_close_names():
    with pytest.raises(UnknownModelError) as e:
        resolve_model("lama-3.1-8b")
    assert any("llama-3.1-8b" in s for s in e.value.suggestions)


def test_missing_path():
    with pytest.raises(ModelNotFoundError):
        resolve_model("./nope/model.gguf")
