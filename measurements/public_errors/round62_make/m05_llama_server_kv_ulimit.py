"""Memory, load, server log: llama-cpp-python's server started under `ulimit -v` (1 GiB above what the server
process maps once imported) with a tiny model and --n_ctx 262144: the KV cache (4 GiB) cannot be allocated."""
from _common import ENV, run_user, tiny_gguf_config, workdir, zero_gguf
from _server import server_vm_kib

META = dict(id="made62-llama-server-kv-ulimit", label="llamacpp_alloc_fail", phase="load",
            family="llamacpp_server_kv_cache_ulimit", runtime="llamacpp", wrapper="server log (llama_cpp.server)",
            cause="ulimit -v = server's import footprint + 1024 MiB; KV cache for n_ctx 262144 is 4 GiB")


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config(layers=8, embd=512, ff=1024, heads=8, kv_heads=8,
                                                        ctx=262144))
    limit = server_vm_kib() + 1024 * 1024
    cmd = (f"ulimit -v {limit}; exec python3 -m llama_cpp.server --model {path} --n_ctx 262144 "
           f"--n_threads 2 --port 18462")
    return run_user(["bash", "-c", cmd], d, env=ENV, timeout=120)
