"""An assertion in the user's code (an expected vocabulary size) after a forward pass."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "an assertion in user code"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"check.py": '''import torch
from transformers import AutoModelForCausalLM

EXPECTED_VOCAB = 32064
model = AutoModelForCausalLM.from_pretrained("./tiny")
logits = model(torch.tensor([[1, 5, 9]])).logits
print("logits", tuple(logits.shape))
assert logits.shape[-1] == EXPECTED_VOCAB, f"vocab mismatch: {logits.shape[-1]} != {EXPECTED_VOCAB}"
'''}
CMD = "python3 check.py"
