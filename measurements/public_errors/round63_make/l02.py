"""A tokenizer from another model (vocab 64,000) with a model of vocab 32,000: token ids past the embedding."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "tokenizer / model vocabulary mismatch: ids beyond the embedding table"}


def fixture(d):
    tiny_hf(d / "base", layers=2, hidden=256, vocab=64000)
    tiny_hf(d / "small", layers=2, hidden=256, vocab=32000)


FILES = {"score.py": '''import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./base")
model = AutoModelForCausalLM.from_pretrained("./small")
ids = tok("w12 w40000 w51234 w7", return_tensors="pt")
with torch.no_grad():
    out = model(**ids)
print(out.logits.shape)
'''}
CMD = "python3 score.py"
