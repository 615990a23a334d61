"""Look-alike: a GGUF whose tokenizer.chat_template has a Jinja syntax error (an unclosed if block), used through
llama-cpp-python's create_chat_completion."""
from _common import copy_gguf, python_script, tiny_gguf_config, workdir, zero_gguf

META = dict(id="made62-llama-gguf-chat-template-broken", label="not_memory", phase="load",
            family="llamacpp_python_chat_template_jinja_error", runtime="llamacpp", wrapper="python traceback",
            cause="the GGUF's chat template has an unclosed if block")
TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n")
BODY = """\
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=2048, n_threads=2)
print(llm.create_chat_completion(messages=[{{"role": "user", "content": "hi"}}], max_tokens=8))
"""


def produce():
    d = workdir(META["id"])
    src = zero_gguf(d, "tiny", cfg=tiny_gguf_config())
    path = copy_gguf(src, d / "tiny-chat.gguf", extra={"tokenizer.chat_template": TEMPLATE})
    return python_script(d, BODY.format(path=str(path)))
