"""A notebook: apply_chat_template with two user turns in a row on a template that raises when roles do not
alternate."""
from harness import tiny_gguf, tiny_hf  # noqa: F401

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "a chat template's raise_exception (roles must alternate)"}
TEMPLATE = ("{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
            "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
            "{% endif %}{{ '[' + m['role'] + '] ' + m['content'] + '\\n' }}{% endfor %}")


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=256, template=TEMPLATE)


CELLS = ['''from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained("./tiny")''',
         '''messages = [{"role": "user", "content": "w1 w2"}, {"role": "user", "content": "w3 w4"}]
text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
print(text)''']
CMD = "python3 nb.py"
