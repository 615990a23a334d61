"""`python -m llama_cpp.server --host 256.1.1.1`: the model loads, then the server cannot bind the (invalid) address."""
from harness74 import tiny_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": None, "wrapper": "llama_cpp.server log",
        "cause": "an invalid --host address the server cannot bind or resolve", "stage": "server bind"}


def fixture(d):
    tiny_gguf(d / "model.gguf")


CMD = "timeout 90 python3 -m llama_cpp.server --model ./model.gguf --n_ctx 2048 --host 256.1.1.1 --port 18774"
