"""transformers generate(cache_implementation="static") with max_new_tokens 100,000 on a batch of 4 after a good load:
the static KV cache for the full length (2 layers x 2 x 4 x 256 x ~100,000 x 4 B, ~1.6 GB) is allocated at generate's
start and refused under a cap of mapped + 128 MiB."""
from harness74 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to transformers' StaticCache for max_new_tokens 100,000",
        "family": "transformers", "stage": "kv allocation at generate start"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256, max_pos=131072)


FILES = {"longgen.py": '''from envsetup import cap
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny")
model = AutoModelForCausalLM.from_pretrained("./tiny")
batch = tok(["w1 w2 w3", "w4 w5 w6", "w7 w8 w9", "w10 w11 w12"], return_tensors="pt")
cap(128)
out = model.generate(**batch, max_new_tokens=100_000, cache_implementation="static", do_sample=False)
print(tok.batch_decode(out[:, -8:]))
'''}
CMD = "python3 longgen.py"
