"""A training forward with labels of another length than the inputs (a data-prep bug): a shape error."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "labels and inputs of mismatched shapes"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"step.py": '''import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny")
input_ids = torch.randint(4, 32000, (4, 128))
labels = torch.randint(4, 32000, (4, 96))
out = model(input_ids=input_ids, labels=labels)
out.loss.backward()
print(out.loss.item())
'''}
CMD = "python3 step.py"
