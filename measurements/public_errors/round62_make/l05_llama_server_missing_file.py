"""Look-alike, load, server CLI: llama-cpp-python's server given a model path that does not exist."""
from _common import ENV, run_user, workdir

META = dict(id="made62-llama-server-missing-file", label="not_memory", phase="load",
            family="llamacpp_server_wrong_path", runtime="llamacpp", wrapper="server log (llama_cpp.server)",
            cause="--model names a file that does not exist")


def produce():
    d = workdir(META["id"])
    cmd = ["python3", "-m", "llama_cpp.server", "--model", "/models/qwen3-8b-q4_k_m.gguf", "--n_ctx", "8192",
           "--port", "18466"]
    return run_user(cmd, d, env=ENV, timeout=120)
