"""A notebook builds the model under accelerate's init_empty_weights (meta tensors) and generates without loading any
weights."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "a model left on the meta device (init_empty_weights, weights never loaded) run for generation",
        "stage": "generation"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


CELLS = ['''import torch
from accelerate import init_empty_weights
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
config = AutoConfig.from_pretrained("./tiny")
tok = AutoTokenizer.from_pretrained("./tiny")
with init_empty_weights():
    model = AutoModelForCausalLM.from_config(config)''',
         '''inputs = tok("w1 w2 w3", return_tensors="pt")
out = model.generate(**inputs, max_new_tokens=8)
tok.decode(out[0])''']
CMD = "python3 nb.py"
