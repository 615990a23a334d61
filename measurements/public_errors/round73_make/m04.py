"""A conversion script quantizes a 1 GiB float32 matrix with gguf-py's numpy Q8_0 quantizer; the cap
(mapped + 256 MiB, set after the matrix is built) is short for the quantizer's temporaries."""
META = {"label": "oom_killer", "runtime": "llamacpp", "phase": None, "wrapper": "python traceback",
        "version": "produced here: gguf-py 0.19.0 (numpy quantizer), CPU",
        "cause": "host RAM refused (RLIMIT_AS) to gguf-py's numpy Q8_0 quantization of a 1 GiB tensor",
        "family": "gguf-py", "stage": "conversion"}
FILES = {"convert_to_gguf.py": '''import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import quantize
from envsetup import cap

rng = np.random.default_rng(0)
weights = {"token_embd.weight": rng.standard_normal((8192, 32768), dtype=np.float32)}
cap(256)
for name, w in weights.items():
    print(f"{name}: {w.shape} {w.dtype} -> Q8_0", flush=True)
    q = quantize(w, GGMLQuantizationType.Q8_0)
    print(f"{name}: {q.nbytes} bytes")
'''}
CMD = "python3 convert_to_gguf.py"
