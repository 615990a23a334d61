"""A classification head built for a 768-wide encoder applied to a 256-wide model's pooled hidden states."""
from harness74 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "a head of the wrong input width (matmul shape mismatch)", "stage": "forward"}


def fixture(d):
    tiny_hf(d / "tiny", layers=1, hidden=256)


FILES = {"classify.py": '''import torch
from transformers import AutoModel, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny")
enc = AutoModel.from_pretrained("./tiny")
head = torch.nn.Linear(768, 2)
batch = tok(["w1 w2 w3", "w4 w5 w6", "w7 w8", "w9"], padding=True, return_tensors="pt")
pooled = enc(**batch).last_hidden_state[:, 0]
print(head(pooled).softmax(-1))
'''}
CMD = "python3 classify.py"
