"""llama.cpp with n_ctx=0 (take the model's trained context) on a tiny GGUF whose metadata claims 1,048,576 tokens: the
KV cache at context creation (4 layers x 2 x 256 x 1,048,576 x 2 B = 4 GiB) is refused under a cap of mapped +
256 MiB; the script's logging puts timestamps on its own lines, llama.cpp's log interleaves on stderr."""
from harness74 import tiny_gguf

META = {"label": "llamacpp_alloc_fail", "runtime": "llamacpp", "phase": "load",
        "wrapper": "python traceback with the script's timestamped logging",
        "cause": "ggml KV cache buffer refused (RLIMIT_AS) at context creation: n_ctx=0 took the trained 1,048,576",
        "family": "llamacpp", "stage": "kv start-up from n_ctx=0"}


def fixture(d):
    tiny_gguf(d / "model.gguf", n_layer=4, ctx_train=1048576)


FILES = {"chat_service.py": '''import logging

from envsetup import cap
from llama_cpp import Llama

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("chat_service")
cap(256)
log.info("loading model ./model.gguf (n_ctx=0: use the model's context length)")
llm = Llama(model_path="./model.gguf", n_ctx=0, n_batch=512)
log.info("model ready, context %d", llm.n_ctx())
print(llm("Hello", max_tokens=8)["choices"][0]["text"])
'''}
CMD = "python3 chat_service.py"
