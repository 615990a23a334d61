"""A shell script sets `ulimit -v 450000` (KiB) and runs a llama-cpp-python script that loads a ~420 MB GGUF with
use_mmap=False: the CPU weight buffer is refused."""
from harness73 import big_gguf

META = {"label": "llamacpp_alloc_fail", "runtime": "llamacpp", "phase": "load", "wrapper": "shell script (python traceback)",
        "cause": "ggml CPU weight buffer refused (ulimit -v) for a 420 MB model loaded without mmap",
        "family": "llamacpp", "stage": "weights"}


def fixture(d):
    big_gguf(d / "model.gguf")


FILES = {"ask.py": '''from llama_cpp import Llama

llm = Llama(model_path="./model.gguf", use_mmap=False, n_ctx=1024)
print(llm("Q: What is the capital of France? A:", max_tokens=16)["choices"][0]["text"])
''', "run.sh": '''#!/bin/bash
# keep the job inside its memory budget
ulimit -v 450000
python3 ask.py
rc=$?
echo "ask.py exit code: $rc"
exit $rc
'''}
CMD = "bash run.sh"
