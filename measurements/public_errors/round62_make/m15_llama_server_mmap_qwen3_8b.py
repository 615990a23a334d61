"""Memory, load, server log: llama-cpp-python's server under `ulimit -v` (1 GiB above its import footprint) given a
Qwen3-8B-sized zero-weight Q4_0 GGUF (4.4 GiB) with mmap on: the mapping of the file does not fit."""
from _common import ENV, run_user, workdir, zero_gguf
from _server import server_vm_kib

META = dict(id="made62-llama-server-mmap-qwen3-8b", label="llamacpp_alloc_fail", phase="load",
            family="llamacpp_server_mmap_ulimit", runtime="llamacpp", wrapper="server log (llama_cpp.server)",
            cause="ulimit -v = server's import footprint + 1024 MiB; mmap of a 4.4 GiB model file")


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "qwen3-8b")
    limit = server_vm_kib() + 1024 * 1024
    cmd = f"ulimit -v {limit}; exec python3 -m llama_cpp.server --model {path} --n_ctx 4096 --port 18464"
    return run_user(["bash", "-c", cmd], d, env=ENV, timeout=120)
