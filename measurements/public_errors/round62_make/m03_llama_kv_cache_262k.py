"""Memory, load: a tiny model (8 layers, 8 KV heads of 64) asked for n_ctx=262144: its F16 KV cache is 4 GiB, under a
cap of 1 GiB above what the process has mapped; the weights fit, the KV cache does not."""
from _common import python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-kv-cache-262k", label="llamacpp_alloc_fail", phase="load",
            family="llamacpp_kv_cache_cap", runtime="llamacpp", wrapper="python traceback",
            cause="RLIMIT_AS = mapped + 1024 MiB; KV cache 2 x 8 layers x 512 x 262144 x 2 B = 4 GiB")
BODY = """\
import memcap62
from llama_cpp import Llama
memcap62.cap_address_space(1024)
llm = Llama(model_path={path!r}, n_ctx=262144, n_threads=2)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config(layers=8, embd=512, ff=1024, heads=8, kv_heads=8,
                                                        ctx=262144))
    return python_script(d, BODY.format(path=str(path)))
