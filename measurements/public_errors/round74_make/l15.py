"""Trainer.train() on a dataset of input_ids only (no labels) with a causal LM: the model returns no loss."""
from harness74 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "a training dataset without labels (the model returns no loss)", "stage": "training step"}


def fixture(d):
    tiny_hf(d / "tiny", layers=1, hidden=64)


FILES = {"sft.py": '''import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("./tiny")
train = [{"input_ids": torch.randint(4, 30000, (32,))} for _ in range(16)]
args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, num_train_epochs=1, report_to=[],
                         use_cpu=True, logging_steps=1)
Trainer(model=model, args=args, train_dataset=train).train()
'''}
CMD = "python3 sft.py"
