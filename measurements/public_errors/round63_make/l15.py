"""save_pretrained into a 2 MiB tmpfs (out of disk): the write fails with ENOSPC."""
import subprocess

from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": None, "wrapper": "python traceback",
        "cause": "an out-of-disk write (a 2 MiB filesystem)"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256)
    (d / "export").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(d / "export")], check=True)


def cleanup(d):
    subprocess.run(["umount", str(d / "export")], check=True)


FILES = {"export.py": '''from transformers import AutoModelForCausalLM, AutoTokenizer

model = AutoModelForCausalLM.from_pretrained("./tiny")
tok = AutoTokenizer.from_pretrained("./tiny")
tok.save_pretrained("export/tiny-finetuned")
model.save_pretrained("export/tiny-finetuned")
print("exported")
'''}
CMD = "python3 export.py"
