"""A notebook: an SVD of a bfloat16 weight on CPU (a LoRA initialisation), an op not implemented for BFloat16."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "a bf16 op (linalg.svd) not implemented on CPU"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256, dtype="bfloat16")


CELLS = ['''import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("./tiny", dtype=torch.bfloat16)''',
         '''W = model.model.layers[0].self_attn.q_proj.weight.detach()
U, S, Vh = torch.linalg.svd(W, full_matrices=False)
r = 8
A, B = U[:, :r] * S[:r], Vh[:r]
A.shape, B.shape''']
CMD = "python3 nb.py"
