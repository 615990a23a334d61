"""A model folder that ships only a SentencePiece tokenizer.model (no tokenizer.json) with tokenizer_class
LlamaTokenizer; sentencepiece is not installed here."""
from harness74 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "sentencepiece (needed for a tokenizer.model-only tokenizer) is not installed", "stage": "tokenizer load"}


def fixture(d):
    import json
    tiny_hf(d / "tiny", layers=1, hidden=64)
    t = d / "tiny"
    (t / "tokenizer.json").unlink()
    (t / "tokenizer.model").write_bytes(b"\n\x0b\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02" * 4)
    (t / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>",
                                                          "eos_token": "</s>", "unk_token": "<unk>"}))


FILES = {"tok.py": '''from transformers import AutoTokenizer

tok = AutoTokenizer.from_pretrained("./tiny")
print(tok("Hello world"))
'''}
CMD = "python3 tok.py"
