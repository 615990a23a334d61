"""Memory, load: a Qwen3-4B-sized zero-weight Q4_0 GGUF (2.3 GiB of weights) loaded with use_mmap=False under an
address-space cap of 1 GiB above what the process has mapped: the CPU weight buffer cannot be allocated."""
from _common import python_script, workdir, zero_gguf

META = dict(id="made62-llama-nommap-qwen3-4b", label="llamacpp_alloc_fail", phase="load",
            family="llamacpp_cpu_weights_nommap_cap", runtime="llamacpp", wrapper="python traceback",
            cause="RLIMIT_AS = mapped + 1024 MiB; the model's weights need 2.3 GiB in a CPU buffer (no mmap)")
BODY = """\
import memcap62
from llama_cpp import Llama
memcap62.cap_address_space(1024)
llm = Llama(model_path={path!r}, n_ctx=2048, use_mmap=False, n_threads=2)
print(llm.n_ctx())
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "qwen3-4b")
    return python_script(d, BODY.format(path=str(path)))
