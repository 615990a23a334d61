"""A shell script sets `ulimit -v 600000` (KiB) and batch-encodes 20,000 documents of 500 words with the tokenizers
library (Rust): the encodings outgrow the address space and Rust's allocator aborts the process."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "shell script (bash reports the abort)",
        "version": "produced here: tokenizers 0.23.3 (Rust), CPU",
        "cause": "host RAM refused (ulimit -v) to tokenizers' Rust encode_batch; the allocator aborts",
        "family": "tokenizers", "stage": "preprocessing"}


def fixture(d):
    tiny_hf(d / "tiny", layers=1, hidden=64)


FILES = {"tokenize_corpus.py": '''from tokenizers import Tokenizer

tok = Tokenizer.from_file("tiny/tokenizer.json")
docs = [" ".join(f"w{(i * 31 + j) % 30000}" for j in range(500)) for i in range(200)] * 100
print(f"encoding {len(docs)} documents", flush=True)
enc = tok.encode_batch(docs)
print(sum(len(e.ids) for e in enc), "tokens")
''', "prep.sh": '''#!/bin/bash
set -u
echo "[prep] tokenizing corpus"
ulimit -v 600000
python3 tokenize_corpus.py
rc=$?
echo "[prep] tokenize_corpus.py exited with $rc"
exit $rc
'''}
CMD = "bash prep.sh"
