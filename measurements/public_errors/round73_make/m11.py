"""generate() with return_dict_in_generate, output_logits and output_scores for a batch of 64, 400 new tokens: every
step keeps two 64 x 32,000 float32 arrays; the cap (mapped + 256 MiB, after load) is passed mid-generation."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to per-step logits and scores kept by generate() for a batch of 64",
        "family": "transformers", "stage": "generation"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"sample_scores.py": '''import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from envsetup import cap

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny")
prompts = [f"w{i} w{i + 1} w{i + 2} w{i + 3}" for i in range(64)]
batch = tok(prompts, return_tensors="pt", padding=True)
cap(256)
with torch.no_grad():
    out = model.generate(**batch, do_sample=True, max_new_tokens=400, min_new_tokens=400,
                         return_dict_in_generate=True, output_scores=True, output_logits=True)
print(len(out.scores), "steps")
'''}
CMD = "python3 sample_scores.py"
