"""A LoRA-merge script in plain torch: load a ~420 MB model, then for each layer's projections compute W + B @ A
(rank 64, float32) into a new state dict; under a cap of mapped + 160 MiB set after the load a merged copy is refused."""
from harness74 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": None, "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to merged weight copies while merging a LoRA into a model",
        "family": "transformers", "stage": "merge"}


def fixture(d):
    tiny_hf(d / "base", layers=4, hidden=1024)


FILES = {"merge_lora.py": '''import torch
from envsetup import cap
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./base")
cap(160)
torch.manual_seed(0)
merged = {}
for name, w in model.state_dict().items():
    if w.dim() == 2 and "layers" in name:
        a = torch.randn(64, w.shape[1]) * 0.01
        b = torch.randn(w.shape[0], 64) * 0.01
        merged[name] = w + (b @ a) * 2.0
        print("merged", name, tuple(w.shape))
    else:
        merged[name] = w.clone()
torch.save(merged, "merged.pt")
'''}
CMD = "python3 merge_lora.py"
