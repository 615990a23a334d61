"""llama.cpp: a model loads with n_ctx 2048, then the user re-creates it with n_ctx 131072 for a long document; the
cap (mapped + 200 MiB, set after the first load) is short for the 256 MiB KV cache.
Revision 2: cap mapped + 100 MiB (at +200 MiB the KV cache fit and the 1.3 GB compute buffer was refused instead)."""
from harness import tiny_gguf

META = {"label": "llamacpp_alloc_fail", "runtime": "llamacpp", "phase": "load", "wrapper": "python traceback",
        "cause": "ggml KV cache buffer refused (RLIMIT_AS) when n_ctx is raised after a good load",
        "family": "llamacpp"}


def fixture(d):
    tiny_gguf(d / "model.gguf", ctx_train=131072)


FILES = {"longdoc.py": '''from llama_cpp import Llama
from envsetup import cap

llm = Llama("./model.gguf", n_ctx=2048, verbose=False)
print(llm("Summarise:", max_tokens=4)["choices"][0]["text"])
cap(100)
del llm
llm = Llama("./model.gguf", n_ctx=131072)
print(llm("Summarise the whole report:", max_tokens=4)["choices"][0]["text"])
'''}
CMD = "python3 longdoc.py"
