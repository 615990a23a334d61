"""Memory, load: a tiny 1-layer model with a 1-layer KV cache that fits, but n_batch = n_ubatch = 32768 with flash
attention off: the compute buffer (the KQ matrix of 32768 x 32768 x 4 heads, F32) cannot be allocated under a cap of
1 GiB above what the process has mapped."""
from _common import python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-compute-buffer-ubatch", label="llamacpp_alloc_fail", phase="load",
            family="llamacpp_compute_buffer_cap", runtime="llamacpp", wrapper="python traceback",
            cause="RLIMIT_AS = mapped + 1024 MiB; compute buffer for a 32768-token ubatch without flash attention")
BODY = """\
import memcap62
from llama_cpp import Llama
memcap62.cap_address_space(1024)
llm = Llama(model_path={path!r}, n_ctx=32768, n_batch=32768, n_ubatch=32768, flash_attn=False, n_threads=2)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config(layers=1, embd=256, ff=512, heads=4, kv_heads=1,
                                                        ctx=32768))
    return python_script(d, BODY.format(path=str(path)))
