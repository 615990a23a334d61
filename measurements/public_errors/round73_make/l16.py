"""A notebook loads with device_map="auto" and max_memory={"cpu": "10 gigs"} (a size string accelerate cannot read)."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "a malformed max_memory size string (bad argument)", "stage": "weights"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


CELLS = ['''from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained("./tiny")''',
         '''model = AutoModelForCausalLM.from_pretrained("./tiny", device_map="auto", max_memory={"cpu": "10 gigs"})
model.hf_device_map''']
CMD = "python3 nb.py"
