"""A shell script runs a llama.cpp script under `prlimit --as`: the script resolves a ~420 MB GGUF from the offline
Hugging Face cache (hf_hub_download) and loads it with use_mmap=False; ggml's CPU weight buffer is refused."""
from harness74 import big_gguf

META = {"label": "llamacpp_alloc_fail", "runtime": "llamacpp", "phase": "load", "wrapper": "shell script (prlimit) reporting exit status",
        "cause": "ggml CPU weight buffer refused (prlimit --as) loading a 420 MB GGUF without mmap",
        "family": "llamacpp", "stage": "weights"}
SHA = "5f1d2c3b4a6978d0e1f2a3b4c5d6e7f8091a2b3c"


def fixture(d):
    repo = d / "hf" / "hub" / "models--acme--tiny-chat-GGUF"
    snap = repo / "snapshots" / SHA
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(SHA)
    big_gguf(snap / "tiny-chat-f32.gguf")


FILES = {"serve_local.py": '''from huggingface_hub import hf_hub_download
from llama_cpp import Llama

path = hf_hub_download("acme/tiny-chat-GGUF", "tiny-chat-f32.gguf")
print("model file:", path, flush=True)
llm = Llama(model_path=path, use_mmap=False, n_ctx=2048)
print(llm("Hi", max_tokens=4)["choices"][0]["text"])
''', "start.sh": '''#!/bin/bash
export HF_HOME="$PWD/hf"
prlimit --as=450000000 python3 serve_local.py
code=$?
echo "serve_local.py exited: $code"
exit $code
'''}
CMD = "bash start.sh"
