"""Memory, load: a Llama-3.2-3B-sized zero-weight Q4_0 GGUF loaded WITH mmap (the default) in a notebook cell under
an address-space cap of 768 MiB above what the kernel has mapped: the file's mapping does not fit the address space."""
from _common import ipython_cell, workdir, zero_gguf

META = dict(id="made62-llama-mmap-llama32-3b-notebook", label="llamacpp_alloc_fail", phase="load",
            family="llamacpp_mmap_cap", runtime="llamacpp", wrapper="notebook cell (IPython)",
            cause="RLIMIT_AS = mapped + 768 MiB; mmap of a 1.9 GiB model file needs more address space")
SETUP = """\
import memcap62
from llama_cpp import Llama
memcap62.cap_address_space(768)
"""
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=4096, n_threads=2)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "llama-3.2-3b")
    return ipython_cell(d, BODY.format(path=str(path)), setup=SETUP.format(path=str(path)))
