"""llama.cpp's quantizer (llama_model_quantize, F32 -> Q8_0) writes its output into a 2 MiB tmpfs: out of disk."""
import subprocess

from harness73 import tiny_gguf

META = {"label": "not_memory", "family": None, "runtime": "llamacpp", "phase": None, "wrapper": "python traceback",
        "cause": "the quantizer's output written to a full 2 MiB filesystem (out of disk)", "stage": "quantization"}


def fixture(d):
    tiny_gguf(d / "model-f32.gguf")
    (d / "out").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(d / "out")], check=True)


def cleanup(d):
    subprocess.run(["umount", str(d / "out")], check=True)


FILES = {"quantize.py": '''import ctypes
import sys

import llama_cpp

params = llama_cpp.llama_model_quantize_default_params()
params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
print("quantizing model-f32.gguf -> out/model-q8_0.gguf", flush=True)
rc = llama_cpp.llama_model_quantize(b"model-f32.gguf", b"out/model-q8_0.gguf", ctypes.byref(params))
if rc != 0:
    sys.exit(f"quantization failed (llama_model_quantize returned {rc})")
print("done")
'''}
CMD = "python3 quantize.py"
