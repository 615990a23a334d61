"""llama.cpp: load a tiny 8-layer GGUF with n_ctx 8192, evaluate a ~4,700-token prompt (600 words) (KV cells ~80 MiB in use), then
cap mapped + 48 MiB and call save_state(): the binding's ctypes buffer for the state is refused."""
from harness74 import tiny_gguf

META = {"label": "oom_killer", "runtime": "llamacpp", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to llama-cpp-python's ctypes state buffer in save_state()",
        "family": "llamacpp", "stage": "state save"}


def fixture(d):
    tiny_gguf(d / "model.gguf", n_layer=8, n_embd=512, ctx_train=8192)


FILES = {"snapshot.py": '''import pickle

from envsetup import cap
from llama_cpp import Llama

llm = Llama(model_path="./model.gguf", n_ctx=8192, n_batch=512, verbose=False)
doc = " ".join(f"t{i % 30000}" for i in range(600))
out = llm(doc + " Summary:", max_tokens=4)
print("prompt tokens:", out["usage"]["prompt_tokens"], "completion:", repr(out["choices"][0]["text"]))
cap(48)
state = llm.save_state()
with open("session.pkl", "wb") as fh:
    pickle.dump(state, fh)
print("saved session")
'''}
CMD = "python3 snapshot.py"
TIMEOUT = 400
