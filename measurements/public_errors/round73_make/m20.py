"""A shell script sets `ulimit -d 700000` (KiB, the data segment) and runs a training step whose batch of 16 x 512
tokens needs 1 GiB of logits: PyTorch's CPU allocator is refused."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "shell script (python traceback)",
        "cause": "host RAM refused (ulimit -d) to a training step's logits",
        "family": "transformers", "stage": "training step"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"step.py": '''import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny")
ids = torch.randint(4, 30000, (16, 512))
print("batch", tuple(ids.shape), flush=True)
loss = model(input_ids=ids, labels=ids).loss
loss.backward()
print("loss", loss.item())
''', "job.sh": '''#!/bin/bash
ulimit -d 700000
python3 step.py
rc=$?
echo "step.py finished: rc=$rc"
exit $rc
'''}
CMD = "bash job.sh"
