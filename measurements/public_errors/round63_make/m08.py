"""Two transformers models loaded one after the other: the first loads, then the cap is mapped + 100 MiB and the
second (a 170 MB float32 model) fails."""
from harness import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to a second model loaded after a first", "family": "transformers"}


def fixture(d):
    tiny_hf(d / "drafter", layers=2, hidden=256)
    tiny_hf(d / "target", layers=4, hidden=512)


FILES = {"spec.py": '''from transformers import AutoModelForCausalLM
from envsetup import cap

draft = AutoModelForCausalLM.from_pretrained("./drafter")
print("draft model ready:", draft.num_parameters())
cap(100)
target = AutoModelForCausalLM.from_pretrained("./target")
print("target model ready:", target.num_parameters())
'''}
CMD = "python3 spec.py"
