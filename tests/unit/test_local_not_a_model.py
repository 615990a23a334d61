"""review18 #13: a file that is no model (/etc/passwd, given as the model over MCP stdio or the CLI) was answered
"config.json is not valid JSON" — it had been read as a config.json; it is "not a model folder, a GGUF file or a
config.json". A config.json under another name (an object in the file) is still read as one."""

from __future__ import annotations

import json

import pytest

from runlocal.errors import ModelFormatError
from runlocal.model.resolve import resolve_model


def test_a_text_file_is_named_for_what_it_is_not(tmp_path):
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(ModelFormatError) as e:
        resolve_model(str(passwd))
    assert str(e.value) == f"{passwd}: not a model folder, a GGUF file or a config.json (expected one of those)"


def test_a_config_under_another_name_is_still_read(tmp_path):
    # Llama-3.1-8B's published config.json fields that the planner reads
    config = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336,
              "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
    named = tmp_path / "llama-config"
    named.write_text("\n  " + json.dumps(config))
    spec = resolve_model(str(named))
    assert spec.n_layers == 32 and spec.layers[0].attention.n_kv_heads == 8


def test_a_broken_json_file_still_says_so(tmp_path):
    broken = tmp_path / "config.json"
    broken.write_text("{ not json")
    with pytest.raises(ModelFormatError, match="is not valid JSON"):
        resolve_model(str(broken))
