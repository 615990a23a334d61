"""transformers generate() with a 6,000-token prompt after a good load; the cap (mapped + 150 MiB, set after the load)
is short for the attention and KV cache the long context needs at run time."""
from harness import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to the KV cache / attention of a 6,000-token prompt at run time",
        "family": "transformers"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=512, max_pos=32768)


FILES = {"chat.py": '''import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from envsetup import cap

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny", attn_implementation="eager")
print("loaded", model.num_parameters(), "params")
cap(150)
doc = " ".join(f"w{i % 30000}" for i in range(6000))
inputs = tok(doc, return_tensors="pt")
print("prompt tokens:", inputs["input_ids"].shape[1])
with torch.no_grad():
    out = model.generate(**inputs, max_new_tokens=32, do_sample=False)
print(tok.decode(out[0][-32:]))
'''}
CMD = "python3 chat.py"
