"""config.json with hidden_act "gelu_fast2", a field value transformers does not know."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "a model config with a bad field (unknown hidden_act)"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256, config_edit={"hidden_act": "gelu_fast2"})


FILES = {"load.py": '''from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny")
print(model.config.hidden_act)
'''}
CMD = "python3 load.py"
