"""Look-alike, notebook cell: apply_chat_template on a tokenizer saved without a chat template."""
from _common import ipython_cell, tiny_hf_model, workdir

META = dict(id="made62-tokenizer-no-chat-template-notebook", label="not_memory", phase="run",
            family="transformers_no_chat_template", runtime="transformers", wrapper="notebook cell (IPython)",
            cause="the tokenizer has no chat_template")
BODY = """\
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained({path!r})
messages = [{{"role": "user", "content": "w5 w6 w7"}}]
ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
"""


def produce():
    d = workdir(META["id"])
    path = tiny_hf_model(d)
    return ipython_cell(d, BODY.format(path=str(path)))
