"""A transformers text-generation pipeline built, then called with 64 prompts of 1,500 tokens at batch_size=64 under
a cap of mapped + 300 MiB set after the build."""
from harness import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) when the pipeline's batch_size is raised at run time",
        "family": "transformers"}


def fixture(d):
    tiny_hf(d / "tiny", layers=4, hidden=512)


FILES = {"batch_gen.py": '''from transformers import pipeline
from envsetup import cap

gen = pipeline("text-generation", model="./tiny", device="cpu")
gen.tokenizer.padding_side = "left"
cap(300)
prompts = [" ".join(f"w{(i + j) % 30000}" for j in range(1500)) for i in range(64)]
outs = gen(prompts, batch_size=64, max_new_tokens=16)
print(len(outs))
'''}
CMD = "python3 batch_gen.py"
