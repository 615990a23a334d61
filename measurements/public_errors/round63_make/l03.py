"""A model cast to torch.float8_e4m3fn on CPU and run: float8 matmul/embedding kernels absent on CPU."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "a dtype (float8_e4m3fn) whose ops are not implemented on CPU"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"fp8.py": '''import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny")
model = model.to(torch.float8_e4m3fn)
ids = torch.tensor([[1, 50, 60, 70]])
with torch.no_grad():
    print(model(ids).logits.shape)
'''}
CMD = "python3 fp8.py"
