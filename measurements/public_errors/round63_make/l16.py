"""Trainer writing its checkpoint into a read-only filesystem (a tmpfs mounted ro)."""
import subprocess

from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": None, "wrapper": "python traceback",
        "cause": "a write to a read-only filesystem"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)
    (d / "models").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64m", "tmpfs", str(d / "models")], check=True)


def cleanup(d):
    subprocess.run(["umount", str(d / "models")], check=True)


FILES = {"save.py": '''from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("./tiny")
model.save_pretrained("models/run1")
print("saved")
'''}
CMD = "python3 save.py"
