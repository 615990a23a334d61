"""Memory, RUN: a tiny model loads (n_ctx 4096, logits_all=True, vocab 32000) with room to spare; then the cap is
lowered to 48 MiB above what the process has mapped, and a 3,900-token prompt is evaluated in one batch: every
token's logits (3900 x 32000 x 4 B = 476 MiB) need a bigger output buffer than was reserved at load."""
from _common import python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-run-long-prompt", label="llamacpp_alloc_fail", phase="run",
            family="llamacpp_run_output_buffer_cap", runtime="llamacpp", wrapper="python traceback",
            cause="after a successful load, RLIMIT_AS lowered to mapped + 48 MiB; a 3,900-token prompt with "
                  "every token's logits needs ~476 MiB more")
BODY = """\
import memcap62
from llama_cpp import Llama
memcap62.cap_address_space(1536)
llm = Llama(model_path={path!r}, n_ctx=4096, n_batch=4096, n_ubatch=512, logits_all=True, n_threads=2)
memcap62.cap_address_space(48)
prompt = [(7 * i) % 31000 + 100 for i in range(3900)]
out = llm.create_completion(prompt, max_tokens=16, logprobs=5)
print(out["choices"][0]["text"])
"""


def produce():
    d = workdir(META["id"])
    path = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    return python_script(d, BODY.format(path=str(path)))
