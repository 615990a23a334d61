"""A generation loop over batches: the first batch is answered and printed, the second holds a None (a missing field
in the input file) and the fast tokenizer refuses it."""
from harness74 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run",
        "wrapper": "python traceback after printed answers",
        "cause": "a None text in a batch (the tokenizer's input type error)", "stage": "tokenization after success"}


def fixture(d):
    tiny_hf(d / "tiny", layers=1, hidden=64)


FILES = {"batch_answer.py": '''import json

from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny")
rows = [{"q": "w1 w2"}, {"q": "w3 w4"}, {"q": "w5"}, {"question": "w6 w7"}]
for start in range(0, len(rows), 2):
    texts = [r.get("q") for r in rows[start:start + 2]]
    enc = tok(texts, return_tensors="pt", padding=True)
    out = model.generate(**enc, max_new_tokens=4, do_sample=False)
    for t, o in zip(texts, out):
        print(json.dumps({"q": t, "a": tok.decode(o[-4:])}))
'''}
CMD = "python3 batch_answer.py"
