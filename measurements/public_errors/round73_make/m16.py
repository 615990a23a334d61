"""A shell script starts llama_cpp.server with --use_mmap false on a ~420 MB GGUF inside a 256 MiB memory cgroup: the
kernel's OOM killer kills the server while it reads the weights, and bash reports it."""
from harness73 import big_gguf

META = {"label": "oom_killer", "runtime": "llamacpp", "phase": "load", "wrapper": "shell script running llama_cpp.server",
        "cause": "kernel OOM killer in a 256 MiB memory cgroup kills llama_cpp.server loading 420 MB of weights without mmap",
        "family": "llamacpp", "stage": "weights"}
CGROUP_MIB = 256


def fixture(d):
    big_gguf(d / "model.gguf")


FILES = {"serve.sh": '''#!/bin/bash
echo "starting llama_cpp.server on :18773"
python3 -m llama_cpp.server --model ./model.gguf --use_mmap false --n_ctx 2048 --host 127.0.0.1 --port 18773
status=$?
echo "llama_cpp.server exited with status $status"
exit $status
'''}
CMD = "bash serve.sh"
