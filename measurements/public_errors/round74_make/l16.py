"""A shell script runs a post-processing script that reads through a NULL pointer with ctypes (a native-extension
bug): the interpreter dies of SIGSEGV and bash reports `Segmentation fault`, exit 139."""
META = {"label": "not_memory", "family": None, "runtime": "numpy", "phase": "run", "wrapper": "shell script (bash reports the crash)",
        "version": "produced here: Python 3.11.7, numpy 2.4.6, CPU",
        "cause": "a NULL-pointer read in native code (segmentation fault), not memory exhaustion", "stage": "post-processing"}

FILES = {"postproc.py": '''import ctypes

import numpy as np

scores = np.linspace(0, 1, 1000, dtype=np.float32)
print("scores ready", scores.shape, flush=True)
first = ctypes.c_float.from_address(8).value
print("first score via native view:", first)
''', "post.sh": '''#!/bin/bash
echo "post-processing started"
python3 postproc.py
rc=$?
echo "postproc.py returned $rc"
exit $rc
'''}
CMD = "bash post.sh"
