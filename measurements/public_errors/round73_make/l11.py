"""A LoRA adapter GGUF given as the model path (the wrong file of a download)."""
from harness73 import lora_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "load", "wrapper": "python traceback",
        "cause": "a LoRA adapter GGUF loaded as a model (wrong file)", "stage": "weights"}


def fixture(d):
    lora_gguf(d / "tiny-chat-lora-q8.gguf", n_layer=2, rank=16)


FILES = {"chat.py": '''from llama_cpp import Llama

llm = Llama(model_path="./tiny-chat-lora-q8.gguf", n_ctx=2048)
print(llm("Hello", max_tokens=16)["choices"][0]["text"])
'''}
CMD = "python3 chat.py"
