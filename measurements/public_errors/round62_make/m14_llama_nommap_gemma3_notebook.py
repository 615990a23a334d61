"""Memory, load, notebook cell: a Gemma-3-4B-sized zero-weight Q4_0 GGUF loaded with use_mmap=False under a cap of
1 GiB above what the kernel maps: the CPU weight buffer cannot be allocated."""
from _common import ipython_cell, workdir, zero_gguf

META = dict(id="made62-llama-nommap-gemma3-4b-notebook", label="llamacpp_alloc_fail", phase="load",
            family="llamacpp_cpu_weights_nommap_cap", runtime="llamacpp", wrapper="notebook cell (IPython)",
            cause="RLIMIT_AS = mapped + 1024 MiB; Gemma-3-4B's Q4_0 weights (~2.3 GiB) in a CPU buffer (no mmap)")
SETUP = """\
import memcap62
from llama_cpp import Llama
memcap62.cap_address_space(1024)
"""
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=8192, use_mmap=False, n_threads=2, verbose=True)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "gemma-3-4b")
    return ipython_cell(d, BODY.format(path=str(path)), setup=SETUP.format(path=str(path)))
