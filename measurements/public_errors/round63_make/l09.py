"""An interrupted download: model.safetensors cut to 60 % of its length, then from_pretrained."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "a partial (interrupted) safetensors file"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)
    p = d / "tiny" / "model.safetensors"
    with open(p, "r+b") as fh:
        fh.truncate(int(p.stat().st_size * 0.6))


FILES = {"load.py": '''from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny")
print("ok")
'''}
CMD = "python3 load.py"
