"""Look-alike, load: a tiny GGUF cut to 60 % of its length (an interrupted download) loaded with llama-cpp-python."""
import os

from _common import python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-truncated-gguf", label="not_memory", phase="load",
            family="llamacpp_truncated_file", runtime="llamacpp", wrapper="python traceback",
            cause="the file is truncated to 60 % of its size (an interrupted download)")
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=2048, n_threads=2)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    os.truncate(path, int(path.stat().st_size * 0.6))
    return python_script(d, BODY.format(path=str(path)))
