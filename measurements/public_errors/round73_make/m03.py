"""llama.cpp's quantizer (llama_model_quantize through llama_cpp's C API), F32 -> Q8_0, of a ~420 MB GGUF; the cap
(mapped + 480 MiB) admits the input's mmap but not the quantizer's work buffers.
Revision 1: cap mapped + 160 MiB (at +480 MiB the quantization finished: exit 0; the log shows 125 MiB tensors, so the
quantizer's per-tensor read and work buffers, about 2 x 125 MiB, pass +160 MiB).
Revision 2: cap mapped + 440 MiB (at +160 MiB the input's 410 MiB mmap was refused, not the work buffers the scenario
names; +440 MiB admits the mmap and leaves 30 MiB, short of one tensor's Q8_0 output (33 MiB) and work buffer)."""
from harness73 import big_gguf

META = {"label": "llamacpp_alloc_fail", "runtime": "llamacpp", "phase": None, "wrapper": "python traceback",
        "cause": "llama.cpp quantizer's buffers refused (RLIMIT_AS) while quantizing a 420 MB model", "family": "llamacpp",
        "stage": "quantization"}


def fixture(d):
    big_gguf(d / "model-f32.gguf")


FILES = {"quantize.py": '''import ctypes
import sys

import llama_cpp
from envsetup import cap

params = llama_cpp.llama_model_quantize_default_params()
params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
params.nthread = 2
cap(440)
print("quantizing model-f32.gguf -> model-q8_0.gguf", flush=True)
rc = llama_cpp.llama_model_quantize(b"model-f32.gguf", b"model-q8_0.gguf", ctypes.byref(params))
if rc != 0:
    sys.exit(f"quantization failed (llama_model_quantize returned {rc})")
print("done")
'''}
CMD = "python3 quantize.py"
