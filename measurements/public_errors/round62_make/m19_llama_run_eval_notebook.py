"""Memory, RUN, notebook cell: a tiny model (vocab 64000, n_ctx 3072, logits_all=True) loads; the cap is then set
32 MiB above what the kernel maps, and llm.eval() of a 3,000-token prompt in one batch needs every token's logits
(3000 x 64000 x 4 B = 732 MiB) in a bigger output buffer than the load reserved."""
from _common import ipython_cell, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-run-eval-notebook", label="llamacpp_alloc_fail", phase="run",
            family="llamacpp_run_output_buffer_cap", runtime="llamacpp", wrapper="notebook cell (IPython)",
            cause="after a successful load, RLIMIT_AS lowered to mapped + 32 MiB; 3,000 tokens' logits need "
                  "~732 MiB more")
SETUP = """\
import memcap62
from llama_cpp import Llama
memcap62.cap_address_space(1536)
llm = Llama(model_path={path!r}, n_ctx=3072, n_batch=3072, logits_all=True, n_threads=2, verbose=False)
memcap62.cap_address_space(32)
"""
BODY = """\
tokens = [(13 * i) % 63000 + 100 for i in range(3000)]
llm.eval(tokens)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config(vocab=64000))
    return ipython_cell(d, BODY.format(path=str(path)), setup=SETUP.format(path=str(path)))
