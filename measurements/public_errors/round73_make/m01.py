"""A notebook: llama.cpp with n_ctx 131072 on a 4-layer tiny GGUF; the cap (mapped + 256 MiB) is set in the cell
before, and the KV cache at start-up (4 layers x 2 x 256 x 131072 x 2 B = 512 MiB) does not fit."""
from harness73 import tiny_gguf

META = {"label": "llamacpp_alloc_fail", "runtime": "llamacpp", "phase": "load", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "ggml KV cache buffer refused (RLIMIT_AS) at context creation for n_ctx 131072", "family": "llamacpp",
        "stage": "kv start-up"}


def fixture(d):
    tiny_gguf(d / "model.gguf", n_layer=4, ctx_train=131072)


CELLS = ['''from llama_cpp import Llama
from envsetup import cap
cap(256)''',
         '''llm = Llama(model_path="./model.gguf", n_ctx=131072, n_batch=512)
print(llm("Once upon a time", max_tokens=16)["choices"][0]["text"])''']
CMD = "python3 nb.py"
