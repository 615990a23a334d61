"""A notebook batch-tokenizes with padding=True with a tokenizer that has no pad token."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "padding asked of a tokenizer without a pad token", "stage": "preprocessing"}


def fixture(d):
    import json
    tiny_hf(d / "tiny", layers=2, hidden=256)
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        p = d / "tiny" / name
        if p.exists():
            c = json.loads(p.read_text())
            c.pop("pad_token", None)
            p.write_text(json.dumps(c, indent=2))


CELLS = ['''from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained("./tiny")
tok''',
         '''texts = ["w1 w2 w3", "w4 w5", "w6 w7 w8 w9 w10"]
batch = tok(texts, padding=True, truncation=True, max_length=512, return_tensors="pt")
batch["input_ids"].shape''']
CMD = "python3 nb.py"
