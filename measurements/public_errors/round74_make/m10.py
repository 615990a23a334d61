"""A shell script sets `ulimit -v 500000` (KiB) and trains a BPE tokenizer (tokenizers' Rust trainer) on a generated
corpus of millions of distinct words: the trainer's word counts outgrow the address space and Rust's allocator
aborts the process."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "shell script (bash reports the abort)",
        "version": "produced here: tokenizers 0.23.3 (Rust), CPU",
        "cause": "host RAM refused (ulimit -v) to tokenizers' BPE trainer", "family": "tokenizers",
        "stage": "tokenizer training"}

FILES = {"train_tok.py": '''from tokenizers import Tokenizer, models, pre_tokenizers, trainers

tok = Tokenizer(models.BPE(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
trainer = trainers.BpeTrainer(vocab_size=64000, special_tokens=["[UNK]", "[PAD]"])


def corpus():
    for b in range(4000):
        yield [" ".join(f"x{(b * 2000 + i) * 7919 % 99999991:x}q{j}" for j in range(20)) for i in range(500)]


print("training BPE on corpus ...", flush=True)
tok.train_from_iterator(corpus(), trainer=trainer)
tok.save("tok.json")
''', "build_tokenizer.sh": '''#!/bin/bash
ulimit -v 500000
echo "[$(date +%H:%M:%S)] train_tok.py start"
python3 train_tok.py
rc=$?
echo "[$(date +%H:%M:%S)] train_tok.py exit $rc"
exit $rc
'''}
CMD = "bash build_tokenizer.sh"
TIMEOUT = 400
