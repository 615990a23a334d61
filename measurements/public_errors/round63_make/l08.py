"""A GPT-2-layout model with n_positions 128 asked to generate 200 new tokens: positions past the position table."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "generation longer than the model's max positions (n_positions 128)"}


def fixture(d):
    tiny_hf(d / "tiny-gpt2", arch="gpt2", layers=2, hidden=256, max_pos=128)


FILES = {"story.py": '''from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny-gpt2")
model = AutoModelForCausalLM.from_pretrained("./tiny-gpt2")
ids = tok("w1 w2 w3 w4 w5", return_tensors="pt")
out = model.generate(**ids, max_new_tokens=200, min_new_tokens=200, do_sample=False)
print(tok.decode(out[0]))
'''}
CMD = "python3 story.py"
