"""Look-alike, server log: llama-cpp-python's server loads a tiny model, then cannot bind its port: another process
already listens on it."""
import socket

from _common import ENV, run_user, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-server-port-in-use", label="not_memory", phase="load",
            family="server_port_in_use", runtime="llamacpp", wrapper="server log (llama_cpp.server)",
            cause="port 18467 is already bound by another socket")
PORT = 18467


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", PORT))
    holder.listen()
    try:
        cmd = ["python3", "-m", "llama_cpp.server", "--model", str(path), "--n_ctx", "2048", "--host", "127.0.0.1",
               "--port", str(PORT)]
        return run_user(cmd, d, env=ENV, timeout=120)
    finally:
        holder.close()
