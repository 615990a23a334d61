"""llama.cpp: a model loads, then the user's GBNF grammar (an unclosed group) is parsed by LlamaGrammar.from_string."""
from harness74 import tiny_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "run", "wrapper": "python traceback",
        "cause": "a GBNF grammar with a syntax error (unclosed parenthesis)", "stage": "grammar parsing"}


def fixture(d):
    tiny_gguf(d / "model.gguf")


FILES = {"classify.py": '''from llama_cpp import Llama, LlamaGrammar

llm = Llama(model_path="./model.gguf", n_ctx=512)
GRAMMAR = r"""
root   ::= answer
answer ::= ( "yes" | "no" | "maybe"
"""
grammar = LlamaGrammar.from_string(GRAMMAR)
print(llm("Is the sky blue? Answer:", grammar=grammar, max_tokens=4)["choices"][0]["text"])
'''}
CMD = "python3 classify.py"
