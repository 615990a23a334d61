"""llama_cpp.server started with a quantized V cache (--type_v 2, Q4_0) and flash attention off: the context is
refused at start-up (the server's log)."""
from harness73 import tiny_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "load", "wrapper": "llama_cpp.server log",
        "cause": "a quantized V cache asked without flash attention (an invalid setting combination)",
        "stage": "context start-up"}


def fixture(d):
    tiny_gguf(d / "model.gguf")


CMD = ("timeout 90 python3 -m llama_cpp.server --model ./model.gguf --n_ctx 8192 --type_k 2 --type_v 2 "
       "--flash_attn false --host 127.0.0.1 --port 18779")
