"""A training step: forward and backward of a ~105M-parameter model succeed; the cap (mapped + 256 MiB, set after
backward) is short for AdamW's state (two float32 copies of every parameter) at the first optimizer.step()."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to AdamW's optimizer state at the first step",
        "family": "transformers", "stage": "training step"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=1024)


FILES = {"finetune.py": '''import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from envsetup import cap

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny")
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
batch = tok(["w1 w2 w3 w4 w5 w6 w7 w8"] * 2, return_tensors="pt")
out = model(**batch, labels=batch["input_ids"])
out.loss.backward()
print(f"step 0 loss {out.loss.item():.4f}", flush=True)
cap(256)
opt.step()
opt.zero_grad()
print("step 0 done")
'''}
CMD = "python3 finetune.py"
