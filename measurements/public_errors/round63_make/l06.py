"""A GGUF whose first tensor is stored as ggml type 4 (Q4_2, removed from ggml): llama.cpp refuses the type."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "load", "wrapper": "python traceback",
        "cause": "a GGUF of an unsupported (removed) quant type"}


def fixture(d):
    tiny_gguf(d / "model-q4_2.gguf", bad_type=4)


FILES = {"run.py": '''from llama_cpp import Llama

llm = Llama("./model-q4_2.gguf", n_ctx=1024)
print(llm("Hello", max_tokens=8)["choices"][0]["text"])
'''}
CMD = "python3 run.py"
