"""Look-alike, RUN: a 3,000-token prompt to a model loaded with n_ctx=2048 (llama-cpp-python's own check)."""
from _common import python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-prompt-exceeds-ctx", label="not_memory", phase="run",
            family="llamacpp_python_prompt_exceeds_n_ctx", runtime="llamacpp", wrapper="python traceback",
            cause="the prompt (3,000 tokens) is longer than n_ctx (2048); nothing is short of memory")
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=2048, n_threads=2)
prompt = [(11 * i) % 31000 + 100 for i in range(3000)]
out = llm.create_completion(prompt, max_tokens=32)
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    return python_script(d, BODY.format(path=str(path)))
