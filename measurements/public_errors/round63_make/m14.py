"""Trainer.evaluate() over 256 rows of 256 tokens (vocab 32,000) accumulates every step's logits; the cap
(mapped + 600 MiB, set after the Trainer is built) is short for the accumulated predictions."""
from harness import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to Trainer.evaluate's accumulated logits", "family": "transformers"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"eval.py": '''import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
from envsetup import cap

class Rows(torch.utils.data.Dataset):
    def __len__(self):
        return 256
    def __getitem__(self, i):
        ids = torch.randint(4, 32000, (256,))
        return {"input_ids": ids, "labels": ids.clone()}

def metrics(p):
    return {"acc": float((p.predictions.argmax(-1) == p.label_ids).mean())}

model = AutoModelForCausalLM.from_pretrained("./tiny")
args = TrainingArguments(output_dir="out", per_device_eval_batch_size=8, report_to=[], use_cpu=True,
                         disable_tqdm=True)
trainer = Trainer(model=model, args=args, eval_dataset=Rows(), compute_metrics=metrics)
cap(600)
print(trainer.evaluate())
'''}
CMD = "python3 eval.py"
