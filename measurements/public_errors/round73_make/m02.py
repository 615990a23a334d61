"""llama.cpp with a LoRA adapter (a zero LoRA GGUF, rank 8192 on q/k/v/o of 4 layers: 256 MiB F32) given as
lora_path; the cap (mapped + 160 MiB, set before the constructor) leaves room for the base model's mmap and context
but not the adapter's buffer."""
from harness73 import lora_gguf, tiny_gguf

META = {"label": "llamacpp_alloc_fail", "runtime": "llamacpp", "phase": "load", "wrapper": "python traceback",
        "cause": "ggml buffer for a 256 MiB LoRA adapter refused (RLIMIT_AS)", "family": "llamacpp",
        "stage": "adapter"}


def fixture(d):
    tiny_gguf(d / "base.gguf", n_layer=4)
    lora_gguf(d / "style-lora.gguf", n_layer=4, rank=8192)


FILES = {"serve_lora.py": '''from llama_cpp import Llama
from envsetup import cap

cap(160)
llm = Llama(model_path="./base.gguf", lora_path="./style-lora.gguf", n_ctx=512, n_batch=64)
print(llm("Write a haiku about rain.", max_tokens=32)["choices"][0]["text"])
'''}
CMD = "python3 serve_lora.py"
