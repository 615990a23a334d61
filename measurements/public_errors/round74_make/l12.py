"""llama_cpp.server given a GGUF whose tokenizer.ggml.model is `sentencepiece` (not a tokenizer llama.cpp knows)."""
from harness74 import tiny_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "load", "wrapper": "llama_cpp.server log",
        "cause": "GGUF metadata names an unknown tokenizer model", "stage": "vocabulary load"}


def fixture(d):
    tiny_gguf(d / "model.gguf", tok_model="sentencepiece")


CMD = "timeout 90 python3 -m llama_cpp.server --model ./model.gguf --n_ctx 2048 --host 127.0.0.1 --port 18775"
