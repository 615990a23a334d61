"""accelerate: Accelerator(mixed_precision="fp16") in a training script started on a CPU-only machine."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": None, "wrapper": "python traceback",
        "version": "produced here: accelerate 1.15.0, torch 2.13.0+cpu, CPU",
        "cause": "fp16 mixed precision asked on a machine with no GPU", "stage": "set-up"}

FILES = {"train.py": '''import torch
from accelerate import Accelerator

accelerator = Accelerator(mixed_precision="fp16")
model = torch.nn.Linear(16, 16)
opt = torch.optim.AdamW(model.parameters())
model, opt = accelerator.prepare(model, opt)
print("device:", accelerator.device)
'''}
CMD = "python3 train.py"
