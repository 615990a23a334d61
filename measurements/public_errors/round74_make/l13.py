"""A split GGUF: the first part (`model-00001-of-00002.gguf`, split.count 2) is present, the second was never
downloaded."""
from harness74 import tiny_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "load", "wrapper": "python traceback",
        "cause": "the second part of a split GGUF is missing", "stage": "weights"}


def fixture(d):
    import gguf

    import runlocal.evidence.zero_gguf as zg
    orig = zg.write_zero_gguf

    def with_split(path, arch, kv, tensors):
        kv = {**kv, "split.no": gguf.GGUFValue(0, gguf.GGUFValueType.UINT16),
              "split.count": gguf.GGUFValue(2, gguf.GGUFValueType.UINT16),
              "split.tensors.count": gguf.GGUFValue(len(tensors) * 2, gguf.GGUFValueType.INT32)}
        return orig(path, arch, kv, tensors)
    zg.write_zero_gguf = with_split
    try:
        tiny_gguf(d / "model-00001-of-00002.gguf")
    finally:
        zg.write_zero_gguf = orig


FILES = {"run.py": '''from llama_cpp import Llama

llm = Llama(model_path="./model-00001-of-00002.gguf", n_ctx=2048)
print(llm("Hello", max_tokens=8)["choices"][0]["text"])
'''}
CMD = "python3 run.py"
