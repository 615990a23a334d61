"""TrainingArguments(report_to="wandb") without the optional wandb package installed."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "an optional package (wandb) not installed"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"train.py": '''import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("./tiny")
ds = [{"input_ids": torch.tensor([1, 5, 9, 2]), "labels": torch.tensor([1, 5, 9, 2])}] * 8
args = TrainingArguments(output_dir="out", report_to="wandb", max_steps=2, use_cpu=True)
trainer = Trainer(model=model, args=args, train_dataset=ds)
trainer.train()
'''}
CMD = "python3 train.py"
