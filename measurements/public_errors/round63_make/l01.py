"""llama-cpp-python with chat_format="llama3-instruct", a name its registry does not hold."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "load", "wrapper": "python traceback",
        "cause": "a wrong chat_format name"}


def fixture(d):
    tiny_gguf(d / "model.gguf")


FILES = {"bot.py": '''from llama_cpp import Llama

llm = Llama("./model.gguf", n_ctx=1024, chat_format="llama3-instruct", verbose=False)
r = llm.create_chat_completion(messages=[{"role": "user", "content": "hello"}], max_tokens=8)
print(r["choices"][0]["message"]["content"])
'''}
CMD = "python3 bot.py"
