"""A notebook: a tiny model generates for a batch of 2 short prompts, then the batch is raised to 96 prompts of 1,024
tokens with the cap (mapped + 300 MiB) set in the setup cell.
Revision 1: eager attention and a cap of mapped + 400 MiB, so the failing allocation is the batch's 1.6 GB attention
matrix and IPython keeps the headroom to format its traceback (at +300 MiB IPython's own formatter hit the cap)."""
from harness import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "host RAM refused (RLIMIT_AS) when the generate() batch is raised at run time", "family": "transformers"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=512)


CELLS = ['''import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from envsetup import cap
tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny", attn_implementation="eager")
cap(400)''',
         '''batch = tok(["w1 w2 w3", "w4 w5 w6"], return_tensors="pt", padding=True)
out = model.generate(**batch, max_new_tokens=8)
out.shape''',
         '''prompts = [" ".join(f"w{(i * 7 + j) % 30000}" for j in range(1024)) for i in range(96)]
batch = tok(prompts, return_tensors="pt", padding=True)
with torch.no_grad():
    out = model.generate(**batch, max_new_tokens=16)
print(out.shape)''']
CMD = "python3 nb.py"
