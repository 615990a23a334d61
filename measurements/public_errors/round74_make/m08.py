"""Gradient accumulation written wrong: the loop adds each micro-batch's loss to a running total and calls backward
only after 16 micro-batches, so every micro-batch's graph (its logits, 4 x 128 x 32,000) stays alive; micro-steps
print with timestamps, then one fails under a cap of mapped + 384 MiB set after the load."""
from harness74 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run",
        "wrapper": "python traceback after timestamped progress lines",
        "cause": "host RAM refused (RLIMIT_AS) to a training step: retained autograd graphs of accumulated losses",
        "family": "transformers", "stage": "training step after successes"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"finetune.py": '''import time

import torch
from envsetup import cap
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
cap(384)
ACCUM = 16
torch.manual_seed(0)
total = 0.0
for micro in range(ACCUM):
    ids = torch.randint(4, 30000, (4, 128))
    loss = model(input_ids=ids, labels=ids).loss
    total = total + loss
    print(time.strftime("%Y-%m-%d %H:%M:%S"), f"micro-batch {micro + 1}/{ACCUM} loss {loss.item():.4f}", flush=True)
(total / ACCUM).backward()
opt.step()
print("step done")
'''}
CMD = "python3 finetune.py"
