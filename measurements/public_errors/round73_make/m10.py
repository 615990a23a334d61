"""Beam search: generate(num_beams=48) over a 1,024-token prompt after a good load; the cap (mapped + 192 MiB) is
short for 48 beams' prefill."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to beam search's 48 expanded beams over a 1,024-token prompt",
        "family": "transformers", "stage": "generation"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=512)


FILES = {"summarise.py": '''import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from envsetup import cap

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny")
doc = " ".join(f"w{(j * 13) % 30000}" for j in range(1024))
inputs = tok(doc, return_tensors="pt")
print("prompt tokens:", inputs["input_ids"].shape[1], flush=True)
cap(192)
with torch.no_grad():
    out = model.generate(**inputs, num_beams=48, num_return_sequences=4, max_new_tokens=64, early_stopping=True)
for seq in out:
    print(tok.decode(seq[inputs["input_ids"].shape[1]:]))
'''}
CMD = "python3 summarise.py"
