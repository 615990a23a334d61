"""A generation loop interrupted with SIGINT (Ctrl-C, sent by timeout -s INT): KeyboardInterrupt inside generate."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "a Ctrl-C (SIGINT) stop during generation"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=512)


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
'''.replace("max_new_tokens=16", "max_new_tokens=512")}
CMD = "timeout -s INT 30 python3 gen.py"
