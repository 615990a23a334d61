"""A tokenizer.json cut short (a download interrupted at half its size) loaded with AutoTokenizer."""
from harness74 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "tokenizer.json truncated (invalid JSON)", "stage": "tokenizer load"}


def fixture(d):
    tiny_hf(d / "tiny", layers=1, hidden=64)
    p = d / "tiny" / "tokenizer.json"
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) // 2])


FILES = {"tok.py": '''from transformers import AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny")
print(tok("w1 w2 w3"))
'''}
CMD = "python3 tok.py"
