"""A probing script runs one forward pass with output_attentions=True (eager) over a 2,048-token prompt through 8
layers: every layer's 4 x 2048 x 2048 float32 attention map (64 MiB) is kept; cap mapped + 256 MiB after load."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to attention maps kept by output_attentions over a 2,048-token prefill",
        "family": "transformers", "stage": "prefill"}


def fixture(d):
    tiny_hf(d / "tiny", layers=8, hidden=256)


FILES = {"probe_attention.py": '''import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from envsetup import cap

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny", attn_implementation="eager")
text = " ".join(f"w{(j * 7) % 30000}" for j in range(2048))
inputs = tok(text, return_tensors="pt")
cap(256)
with torch.no_grad():
    out = model(**inputs, output_attentions=True)
heads = torch.stack([a[0].mean(0) for a in out.attentions])
print(heads.shape)
'''}
CMD = "python3 probe_attention.py"
