"""A pasted log's model name is resolved from the catalog or the Hugging Face cache only (diagnose/vllm_budget.py),
never as a local path: the API and the site diagnose logs anonymous callers paste (review17b finding 1's kind)."""

import json

from runlocal.diagnose import vllm_budget


def test_a_local_model_folder_named_by_a_log_is_not_read(tmp_path, monkeypatch):
    folder = tmp_path / "secret-model"
    folder.mkdir()
    # a readable llama-shaped config: were it read, the estimate would be 2 x 32 x 8 x 128 x 2 B x 4,096 = 512 MiB
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
        "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}))
    opened = []
    real_open = open

    def spy(path, *a, **k):
        opened.append(str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr("builtins.open", spy)
    vllm_budget._estimate.cache_clear()
    assert vllm_budget.estimated_request({"model": str(folder), "max_model_len": 4096}) is None
    assert not [p for p in opened if str(folder) in p]


def test_a_catalog_model_named_by_a_log_is_estimated():
    # llama-3.1-8b: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 B = 131,072 B a token, x 4,096 = 512 MiB
    vllm_budget._estimate.cache_clear()
    got = vllm_budget.estimated_request({"model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 4096})
    assert got is not None and got[0] == 32 * 8 * 128 * 2 * 2 * 4096
