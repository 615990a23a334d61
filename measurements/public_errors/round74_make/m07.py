"""A training script loads a ~420 MB model, then makes an EMA copy with copy.deepcopy(model) under a cap of mapped +
64 MiB: the copy's parameters are refused."""
from harness74 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to copy.deepcopy of a model (an EMA copy) at training start",
        "family": "transformers", "stage": "training set-up"}


def fixture(d):
    tiny_hf(d / "base", layers=4, hidden=1024)


FILES = {"train_ema.py": '''import copy

import torch
from envsetup import cap
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./base")
print(f"model loaded: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params")
cap(64)
ema = copy.deepcopy(model).eval()
for p in ema.parameters():
    p.requires_grad_(False)
print("EMA ready")
'''}
CMD = "python3 train_ema.py"
