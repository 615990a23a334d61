"""Two llama.cpp models loaded one after the other with use_mmap=False: the first loads, then the cap is mapped +
100 MiB and the second (420 MB of F32 weights) fails in its CPU buffer."""
from harness import tiny_gguf

META = {"label": "llamacpp_alloc_fail", "runtime": "llamacpp", "phase": "load", "wrapper": "python traceback",
        "cause": "ggml CPU weight buffer refused (RLIMIT_AS) for a second model loaded after a first",
        "family": "llamacpp"}


def fixture(d):
    tiny_gguf(d / "embedder.gguf")
    tiny_gguf(d / "chat.gguf", n_layer=4, n_embd=1024)


FILES = {"rag.py": '''from llama_cpp import Llama
from envsetup import cap

emb = Llama("./embedder.gguf", embedding=True, use_mmap=False, n_ctx=512, verbose=False)
print("embedder loaded")
cap(100)
chat = Llama("./chat.gguf", use_mmap=False, n_ctx=2048)
print("chat loaded")
'''}
CMD = "python3 rag.py"
