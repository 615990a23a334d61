"""A bfloat16 model fed float32 inputs_embeds (dtype mismatch in a linear layer)."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "float32 inputs_embeds into a bfloat16 model (dtype mismatch)", "stage": "prefill"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"soft_prompt.py": '''import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny", dtype=torch.bfloat16)
soft_prompt = torch.randn(1, 16, model.config.hidden_size)
with torch.no_grad():
    out = model(inputs_embeds=soft_prompt)
print(out.logits.shape)
'''}
CMD = "python3 soft_prompt.py"
