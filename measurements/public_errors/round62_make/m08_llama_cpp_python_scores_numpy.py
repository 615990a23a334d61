"""Memory, load: llama-cpp-python with logits_all=True keeps an n_ctx x n_vocab float32 score array; with n_ctx
32768 and a 32000-token vocabulary that is 3.9 GiB, under a cap of 1 GiB above what the process has mapped. llama.cpp's
own buffers are small (a tiny model): the failing allocation is the binding's host array."""
from _common import python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-cpp-python-scores-array", label="oom_killer", phase="load",
            family="llamacpp_python_host_array_cap", runtime="llamacpp", wrapper="python traceback",
            cause="RLIMIT_AS = mapped + 1024 MiB; the binding's logits_all score array is 32768 x 32000 x 4 B = "
                  "3.9 GiB of host RAM (host RAM refused outside ggml's buffers)")
BODY = """\
import memcap62
from llama_cpp import Llama
memcap62.cap_address_space(1024)
llm = Llama(model_path={path!r}, n_ctx=32768, logits_all=True, n_threads=2)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config(ctx=32768))
    return python_script(d, BODY.format(path=str(path)))
