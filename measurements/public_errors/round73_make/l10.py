"""llama-cpp-python: llm.embed() on a model not created with embedding=True."""
from harness73 import tiny_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "run", "wrapper": "python traceback",
        "cause": "embed() called on a Llama created without embedding=True", "stage": "embedding"}


def fixture(d):
    tiny_gguf(d / "model.gguf")


FILES = {"index_docs.py": '''from llama_cpp import Llama

llm = Llama(model_path="./model.gguf", n_ctx=2048, verbose=False)
docs = ["The cat sat on the mat.", "Rain is expected tomorrow.", "GGUF files hold tensors."]
vectors = [llm.embed(doc) for doc in docs]
print(len(vectors), len(vectors[0]))
'''}
CMD = "python3 index_docs.py"
