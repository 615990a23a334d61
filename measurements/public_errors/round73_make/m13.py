"""A ~105M-parameter float32 model is loaded, then cast to float64 for a numerical check; the cap (mapped + 64 MiB,
after load) is short for the float64 copies."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": None, "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to model.to(torch.float64) of a 420 MB model",
        "family": "transformers", "stage": "conversion"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=1024)


FILES = {"gradcheck_prep.py": '''import torch
from transformers import AutoModelForCausalLM
from envsetup import cap

model = AutoModelForCausalLM.from_pretrained("./tiny")
print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters", flush=True)
cap(64)
model = model.to(torch.float64)
print("float64 ready")
'''}
CMD = "python3 gradcheck_prep.py"
