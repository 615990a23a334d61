"""A generation script answers 8 prompts with output_scores (the answers print), then saves the results with their
per-step scores as JSON (.tolist() then json.dump, ~16 M Python floats) under a cap of mapped + 64 MiB set after
generation."""
from harness74 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback after printed answers",
        "cause": "host RAM refused (RLIMIT_AS) to Python objects while serialising generation scores (MemoryError)",
        "family": "transformers", "stage": "result saving after success"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"answer.py": '''import json

from envsetup import cap
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny")
prompts = [f"w{i} w{i + 1} w{i + 2}" for i in range(8)]
enc = tok(prompts, return_tensors="pt")
out = model.generate(**enc, max_new_tokens=64, do_sample=False, output_scores=True, return_dict_in_generate=True)
for p, seq in zip(prompts, out.sequences):
    print(f"{p!r} -> {tok.decode(seq[-6:])!r}")
cap(64)
results = [{"prompt": p, "scores": [s[i].tolist() for s in out.scores]} for i, p in enumerate(prompts)]
with open("results.json", "w") as fh:
    json.dump(results, fh)
print("saved results.json")
'''}
CMD = "python3 answer.py"
