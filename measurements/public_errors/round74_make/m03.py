"""A shell script runs a llama.cpp script with use_mlock=True on a ~420 MB GGUF inside a 256 MiB memory cgroup: the
locked file pages cannot be reclaimed, the kernel's OOM killer kills python, bash reports `Killed`."""
from harness74 import big_gguf

META = {"label": "oom_killer", "runtime": "llamacpp", "phase": "load", "wrapper": "shell script (bash reports the kill)",
        "cause": "kernel OOM killer in a 256 MiB memory cgroup: llama.cpp mlocks 420 MB of mapped weights",
        "family": "llamacpp", "stage": "mlock of weights"}
CGROUP_MIB = 256


def fixture(d):
    big_gguf(d / "model.gguf")


FILES = {"pinned_llm.py": '''from llama_cpp import Llama

llm = Llama(model_path="./model.gguf", use_mmap=True, use_mlock=True, n_ctx=1024)
print(llm("The capital of France is", max_tokens=8)["choices"][0]["text"])
''', "run.sh": '''#!/bin/bash
echo "== keeping model resident (mlock) =="
python3 pinned_llm.py
status=$?
echo "== pinned_llm.py finished with exit code $status =="
exit $status
'''}
CMD = "bash run.sh"
