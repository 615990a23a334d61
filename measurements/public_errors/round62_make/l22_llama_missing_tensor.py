"""Look-alike, load: a GGUF from which one tensor (blk.1.ffn_down.weight) is missing (a broken conversion)."""
from _common import copy_gguf, python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-missing-tensor", label="not_memory", phase="load",
            family="llamacpp_missing_tensor", runtime="llamacpp", wrapper="python traceback",
            cause="the file lacks blk.1.ffn_down.weight")
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=2048, n_threads=2)
"""


def produce():
    d = workdir(META["id"])
    src = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    path = copy_gguf(src, d / "tiny-q4_0.gguf", drop_tensor="blk.1.ffn_down.weight")
    return python_script(d, BODY.format(path=str(path)))
