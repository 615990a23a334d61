"""llama.cpp with use_mlock=True run without CAP_IPC_LOCK under `ulimit -l 64` (llama.cpp prints its mlock warning),
then the user's script reads a key the completion dict does not have (KeyError)."""
from harness73 import tiny_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": "run", "wrapper": "shell script (python traceback)",
        "cause": "a wrong key read from the completion (KeyError) after a harmless mlock warning", "stage": "generation",
        "note": "the mlock warning is induced (ulimit -l 64 without CAP_IPC_LOCK); the failure is the KeyError"}


def fixture(d):
    tiny_gguf(d / "model.gguf")


FILES = {"chat_locked.py": '''from llama_cpp import Llama

llm = Llama(model_path="./model.gguf", use_mlock=True, n_ctx=512)
r = llm("Hello, my name is", max_tokens=8)
print(r["choices"][0]["message"]["content"])
''', "run.sh": '''#!/bin/bash
ulimit -l 64
capsh --drop=cap_ipc_lock -- -c "python3 chat_locked.py"
'''}
CMD = "bash run.sh"
