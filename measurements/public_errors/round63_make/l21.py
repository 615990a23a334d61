"""llama_cpp.server started with --chat_format llama3 (a name its registry does not hold): the server's log."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "load", "wrapper": "llama_cpp.server log",
        "cause": "a wrong chat format name given to the server"}


def fixture(d):
    tiny_gguf(d / "model.gguf")


CMD = "timeout 60 python3 -m llama_cpp.server --model ./model.gguf --n_ctx 1024 --chat_format llama3 --port 18763"
