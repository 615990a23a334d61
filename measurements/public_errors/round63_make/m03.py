"""A Trainer step with per_device_train_batch_size raised to 64 x 512 tokens (vocab 32,000) under a cap of
mapped + 600 MiB set after the Trainer is built."""
from harness import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to a training step's activations with a larger batch",
        "family": "transformers"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"train.py": '''import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
from envsetup import cap

class Rows(torch.utils.data.Dataset):
    def __len__(self):
        return 512
    def __getitem__(self, i):
        ids = torch.randint(4, 32000, (512,))
        return {"input_ids": ids, "labels": ids.clone()}

model = AutoModelForCausalLM.from_pretrained("./tiny")
args = TrainingArguments(output_dir="out", per_device_train_batch_size=64, max_steps=4, report_to=[],
                         logging_steps=1, save_strategy="no", use_cpu=True, disable_tqdm=True)
trainer = Trainer(model=model, args=args, train_dataset=Rows())
cap(600)
trainer.train()
'''}
CMD = "python3 train.py"
