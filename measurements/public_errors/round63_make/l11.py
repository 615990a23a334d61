"""A generation job stopped with SIGTERM (timeout -s TERM) by its shell script: no traceback, exit 124."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "shell script",
        "cause": "a SIGTERM stop of a running generation job"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"gen.py": '''import time
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny")
for i in range(100000):
    ids = tok(f"w{i} w{i + 1} w{i + 2}", return_tensors="pt")
    out = model.generate(**ids, max_new_tokens=16, do_sample=False)
    print(f"sample {i}: {tok.decode(out[0][-4:])}", flush=True)
    time.sleep(0.5)
''', "batch.sh": '''#!/bin/bash
echo "batch job started"
timeout -s TERM 25 python3 gen.py
rc=$?
echo "gen.py exited with code $rc"
exit $rc
'''}
CMD = "bash batch.sh"
