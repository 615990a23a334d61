"""resize_token_embeddings to 2,000,000 tokens (hidden 256: 2 GB of float32 for the new embedding) after a good
load, under a cap of mapped + 300 MiB."""
from harness import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to a resized embedding matrix after a good load",
        "family": "transformers"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)


FILES = {"extend_vocab.py": '''from transformers import AutoModelForCausalLM
from envsetup import cap

model = AutoModelForCausalLM.from_pretrained("./tiny")
cap(300)
new_vocab = 2_000_000
model.resize_token_embeddings(new_vocab)
print(model.get_input_embeddings().weight.shape)
'''}
CMD = "python3 extend_vocab.py"
