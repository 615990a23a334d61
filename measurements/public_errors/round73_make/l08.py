"""load_state_dict of a fine-tuned checkpoint whose embeddings were resized to 32,001 into the 32,000-token base."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "a state dict of another vocabulary size (32,001 vs 32,000): size mismatch", "stage": "state dict"}


def fixture(d):
    import torch
    from transformers import AutoModelForCausalLM
    tiny_hf(d / "base", layers=2, hidden=256)
    m = AutoModelForCausalLM.from_pretrained(d / "base")
    m.resize_token_embeddings(32001)
    torch.save(m.state_dict(), d / "finetuned.pt")


FILES = {"restore_finetune.py": '''import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./base")
state = torch.load("finetuned.pt", map_location="cpu")
model.load_state_dict(state)
print("restored")
'''}
CMD = "python3 restore_finetune.py"
