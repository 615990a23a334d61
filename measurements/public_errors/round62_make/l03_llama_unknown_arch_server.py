"""Look-alike, load, server log: a GGUF whose general.architecture is 'qwen9' (an architecture newer than the
vendored llama.cpp) given to llama-cpp-python's server."""
from _common import ENV, copy_gguf, run_user, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-unknown-arch-server", label="not_memory", phase="load",
            family="llamacpp_unknown_architecture", runtime="llamacpp", wrapper="server log (llama_cpp.server)",
            cause="general.architecture 'qwen9' is not an architecture this llama.cpp knows")


def produce():
    d = workdir(META["id"])
    src = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    out = copy_gguf(src, d / "qwen9-tiny.gguf", arch="qwen9")
    cmd = ["python3", "-m", "llama_cpp.server", "--model", str(out), "--port", "18465"]
    return run_user(cmd, d, env=ENV, timeout=120)
