"""A shell script sets `ulimit -f 10240` (a 10 MiB file-size limit) and the job saves a ~70 MB model:
File too large."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": None, "wrapper": "shell script (python traceback)",
        "cause": "the file-size limit (ulimit -f) passed while saving a checkpoint", "stage": "save"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"save_ckpt.py": '''from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny")
model.save_pretrained("checkpoints/step-1000")
print("saved checkpoints/step-1000")
''', "train_job.sh": '''#!/bin/bash
ulimit -f 10240
python3 save_ckpt.py
rc=$?
echo "save_ckpt.py exited with $rc"
exit $rc
'''}
CMD = "bash train_job.sh"
