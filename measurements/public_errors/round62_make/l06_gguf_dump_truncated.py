"""Look-alike, CLI: gguf-py's gguf-dump reading a GGUF cut inside its tensor-info section."""
import os

from _common import ENV, run_user, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-gguf-dump-truncated", label="not_memory", phase="load",
            family="gguf_reader_truncated_file", runtime="llamacpp", wrapper="CLI stderr (gguf-dump)",
            cause="the file is cut at 3,000 bytes, inside its header")


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    os.truncate(path, 3000)
    return run_user(["gguf-dump", str(path.name)], d, env=ENV, timeout=120)
