"""A GGUF declaring tokenizer.ggml.model "gpt2" with no merges: llama.cpp's vocabulary load fails."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "load", "wrapper": "python traceback",
        "cause": "a GGUF tokenizer mismatch (gpt2 BPE declared, no merges)"}


def fixture(d):
    tiny_gguf(d / "model.gguf", tok_model="gpt2")


FILES = {"run.py": '''from llama_cpp import Llama

llm = Llama("./model.gguf", n_ctx=1024)
print(llm("Hello", max_tokens=8)["choices"][0]["text"])
'''}
CMD = "python3 run.py"
