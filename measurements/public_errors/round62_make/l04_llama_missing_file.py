"""Look-alike, load: a model path with a typo (the file is Q4_K_M, the path says Q4_K_S)."""
from _common import python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-missing-file", label="not_memory", phase="load",
            family="llamacpp_wrong_path", runtime="llamacpp", wrapper="python traceback",
            cause="the path names a file that does not exist")
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path="models/tiny-llama.Q4_K_S.gguf", n_ctx=4096)
"""


def produce():
    d = workdir(META["id"])
    (d / "models").mkdir()
    path = zero_gguf(d / "models", "tiny", cfg=tiny_gguf_config())
    path.rename(d / "models" / "tiny-llama.Q4_K_M.gguf")
    return python_script(d, BODY)
