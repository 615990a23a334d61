"""Look-alike: a chat template with a Jinja syntax error (an unclosed for block), used by apply_chat_template."""
from _common import python_script, tiny_hf_model, tiny_tokenizer, workdir

META = dict(id="made62-chat-template-syntax-error", label="not_memory", phase="run",
            family="transformers_chat_template_jinja_error", runtime="transformers", wrapper="python traceback",
            cause="the chat template's for block is never closed")
TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
BODY = """\
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained({path!r})
text = tok.apply_chat_template([{{"role": "user", "content": "w5 w6"}}], tokenize=False,
                               add_generation_prompt=True)
print(text)
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    tiny_tokenizer(path, chat_template=TEMPLATE)
    return python_script(d, BODY.format(path=str(path)))
