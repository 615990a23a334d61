"""llama.cpp with n_ctx 8192 on a model trained at 2048 (a warning at load), then a 9,000-token prompt: past n_ctx."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "run", "wrapper": "python traceback",
        "cause": "n_ctx above n_ctx_train (a warning) and a prompt longer than n_ctx (the error)"}


def fixture(d):
    tiny_gguf(d / "model.gguf", ctx_train=2048)


FILES = {"long.py": '''from llama_cpp import Llama

llm = Llama("./model.gguf", n_ctx=8192)
prompt = "lorem ipsum dolor sit amet " * 1700
out = llm(prompt, max_tokens=64)
print(out["choices"][0]["text"])
'''}
CMD = "python3 long.py"
