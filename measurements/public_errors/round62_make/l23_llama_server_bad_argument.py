"""Look-alike, CLI: llama-cpp-python's server given --n_ctx 8k (a suffix it does not parse)."""
from _common import ENV, run_user, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-server-bad-n-ctx", label="not_memory", phase="load",
            family="server_invalid_argument", runtime="llamacpp", wrapper="CLI stderr (llama_cpp.server)",
            cause="--n_ctx 8k is not an integer")


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    cmd = ["python3", "-m", "llama_cpp.server", "--model", str(path), "--n_ctx", "8k", "--port", "18468"]
    return run_user(cmd, d, env=ENV, timeout=120)
