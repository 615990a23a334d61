"""`make train` runs a training script inside a 600 MiB memory cgroup; a batch of 32 x 1,024 tokens makes the logits
(4 GiB) pass the limit, the OOM killer kills python and make reports the recipe's failure."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "make",
        "cause": "kernel OOM killer in a 600 MiB memory cgroup kills a training step run by make",
        "family": "transformers", "stage": "training step"}
CGROUP_MIB = 600


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"Makefile": '''.PHONY: train
BATCH ?= 32

train:
\t@echo "==> training (batch $(BATCH))"
\tpython3 train.py --batch $(BATCH) --seq 1024
\t@echo "==> done"
''', "train.py": '''import argparse

import torch
from transformers import AutoModelForCausalLM

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--seq", type=int, default=512)
args = ap.parse_args()
model = AutoModelForCausalLM.from_pretrained("./tiny")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(3):
    ids = torch.randint(4, 30000, (args.batch, args.seq))
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(f"step {step} loss {loss.item():.3f}", flush=True)
'''}
CMD = "make train"
