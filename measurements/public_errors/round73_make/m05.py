"""A shell script sets `ulimit -v 400000` (KiB) and runs gguf-dump on a ~420 MB GGUF: gguf-py's reader memory-maps
the whole file, more than the address space left after the import."""
from harness73 import big_gguf

META = {"label": "oom_killer", "runtime": "llamacpp", "phase": "load", "wrapper": "shell script (gguf-dump CLI)",
        "version": "produced here: gguf-py 0.19.0 (gguf-dump), CPU",
        "cause": "address space refused (ulimit -v) to gguf-py's mmap of a 420 MB file", "family": "gguf-py",
        "stage": "mmap"}


def fixture(d):
    big_gguf(d / "model.gguf")


FILES = {"inspect.sh": '''#!/bin/bash
echo "== inspecting model.gguf ($(du -h --apparent-size model.gguf | cut -f1))"
ulimit -v 400000
gguf-dump --no-tensors model.gguf
rc=$?
echo "== gguf-dump exited with status $rc"
exit $rc
'''}
CMD = "bash inspect.sh"
